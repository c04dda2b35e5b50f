"""Shared output for CLI commands: one JSON object with --json, readable text otherwise."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")


def emit(args: argparse.Namespace, result: dict[str, Any], text: str) -> None:
    """Print `result` as JSON when --json was given, else `text`."""
    if getattr(args, "json", False):
        sys.stdout.write(json.dumps(result, default=str, sort_keys=True) + "\n")
    else:
        sys.stdout.write(text.rstrip("\n") + "\n")


def fail(message: str, code: int = 2) -> int:
    """A usage or input error: say what is wrong on stderr and return its exit code."""
    sys.stderr.write(f"flywheel: error: {message}\n")
    return code
