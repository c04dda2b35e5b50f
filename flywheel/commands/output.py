"""Shared output for CLI commands: one JSON object with --json, readable text otherwise."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import sys
from collections.abc import Iterator
from typing import Any, TextIO

_data_stream: TextIO | None = None
"""The real stdout while `reserved_stdout` holds it (None: sys.stdout)."""


def data_stream() -> TextIO:
    """Where a command writes its output: stdout, even while library chatter is sent to stderr."""
    return _data_stream or sys.stdout


@contextlib.contextmanager
def reserved_stdout() -> Iterator[None]:
    """Under --json, stdout carries the command's output alone: anything a library prints meanwhile
    (DeepSpeed's accelerator notice, a progress line) goes to stderr instead of breaking the JSON."""
    global _data_stream
    real = _data_stream = sys.stdout
    # log handlers made earlier hold stdout itself (DeepSpeed's does): point them at stderr meanwhile
    handlers = [h for lg in [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]
                for h in getattr(lg, "handlers", ()) if isinstance(h, logging.StreamHandler)
                and getattr(h, "stream", None) is real]
    for h in handlers:
        h.setStream(sys.stderr)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        _data_stream = None
        for h in handlers:
            h.setStream(real)


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")


def emit(args: argparse.Namespace, result: dict[str, Any], text: str) -> None:
    """Print `result` as JSON when --json was given, else `text`."""
    if getattr(args, "json", False):
        data_stream().write(json.dumps(result, default=str, sort_keys=True) + "\n")
    else:
        data_stream().write(text.rstrip("\n") + "\n")


def fail(message: str, code: int = 2) -> int:
    """A usage or input error: say what is wrong on stderr and return its exit code."""
    sys.stderr.write(f"flywheel: error: {message}\n")
    return code
