"""Shared output for CLI commands: one JSON object with --json, readable text otherwise, and the exit codes.

Every command exits with one of `EXIT_CODES` (docs/cli.md has the table). Under `--json` stdout
carries exactly one JSON object: the result, or `{"error": ..., "exit_code": ...}`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import sys
from collections.abc import Iterator
from typing import Any, TextIO

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INFRA = 3
EXIT_CODES: dict[int, str] = {
    EXIT_OK: "ok: the command did what was asked",
    EXIT_FAILED: "failed: the work ran and its result is a failure (a gate, a verification, a sandboxed program "
                 "that exited non-zero or was killed, a quarantine rate over its limit)",
    EXIT_USAGE: "usage or config error: a bad flag, value, file or name; nothing was changed",
    EXIT_INFRA: "infrastructure failure: the sandbox, a verifier's runtime, MLflow or Dagster could not be "
                "reached or broke; safe to retry",
}
"""The only exit codes a `flywheel` command returns, declared once (docs/cli.md renders this table)."""

INFRA_ERRORS: tuple[str, ...] = ("SandboxInfraError", "VerifierInfraError", "DagsterUserCodeUnreachableError")
"""Exception class names that mean a system the command needs broke, not the work: exit 3 (safe to retry)."""


USAGE_ERRORS: tuple[type[BaseException], ...] = (PermissionError, FileExistsError, NotADirectoryError,
                                                  IsADirectoryError, FileNotFoundError, UnicodeDecodeError)
"""A file the user named that cannot be read or written as asked (an unwritable warehouse, a folder where a
file should be, bytes that are not UTF-8): exit 2 with one line, no traceback."""


def exit_code_for(e: BaseException) -> int:
    """3 for an infrastructure failure (a connection refused or timed out, MLflow's server not answering, a
    sandbox or verifier runtime that broke; also as the cause of a wrapping error, e.g. a Dagster step's),
    2 for a file the user named that cannot be used (`USAGE_ERRORS`, DuckDB refusing to open a file),
    else 1: the work ran and failed."""
    seen: list[BaseException] = []
    cur: BaseException | None = e
    while cur is not None and cur not in seen and len(seen) < 8:
        seen.append(cur)
        name, module = type(cur).__name__, type(cur).__module__.split(".")[0]
        if isinstance(cur, (ConnectionError, TimeoutError)) or name in INFRA_ERRORS or module in ("requests", "urllib3"):
            return EXIT_INFRA
        if name == "MlflowException" and "API request to" in str(cur):  # the server did not answer
            return EXIT_INFRA
        if isinstance(cur, USAGE_ERRORS) or (module.lstrip("_") == "duckdb" and name == "IOException"
                                             and ("Cannot open" in str(cur) or "not a valid DuckDB" in str(cur))):
            return EXIT_USAGE
        cur = getattr(cur, "user_exception", None) or cur.__cause__
    return EXIT_FAILED


_data_stream: TextIO | None = None
"""The real stdout while `reserved_stdout` holds it (None: sys.stdout)."""

_json_mode = False
"""True while a command runs with --json: `fail` then writes its error as the JSON object on stdout."""

_emitted = False
"""True once the running command has written its JSON object (a later `fail` must not add a second one)."""


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


@contextlib.contextmanager
def json_errors(enabled: bool) -> Iterator[None]:
    """While a command runs: with `enabled` (its --json), `fail` answers with one JSON object on stdout."""
    global _json_mode, _emitted
    _json_mode, _emitted = enabled, False
    try:
        yield
    finally:
        _json_mode, _emitted = False, False


def emit(args: argparse.Namespace, result: dict[str, Any], text: str) -> None:
    """Print `result` as JSON when --json was given, else `text`."""
    global _emitted
    if getattr(args, "json", False):
        data_stream().write(json.dumps(result, default=str, sort_keys=True) + "\n")
        _emitted = True
    else:
        data_stream().write(text.rstrip("\n") + "\n")


def mark_emitted() -> None:
    """The command wrote its JSON output itself (JSON lines, say): a later `fail` goes to stderr only."""
    global _emitted
    _emitted = True


def utf8_text(data: bytes) -> tuple[str | None, str]:
    """`data` as text, or (None, why) naming the first byte that is not UTF-8: a file a command reads is the
    user's input, and a bad one is a usage error (exit 2), never a traceback."""
    try:
        return data.decode("utf-8"), ""
    except UnicodeDecodeError as e:
        return None, f"not UTF-8 text (byte {e.start}: {data[e.start:e.start + 1]!r})"


def fail(message: str, code: int = EXIT_USAGE) -> int:
    """Say what is wrong and return `code` (one of `EXIT_CODES`): one line on stderr, or under --json
    `{"error": message, "exit_code": code}` on stdout (stderr only, when the result was already emitted)."""
    if code not in EXIT_CODES or code == EXIT_OK:
        raise ValueError(f"fail() needs a failing exit code from EXIT_CODES, got {code}")
    message = " ".join(message.split())  # one line, whatever the cause's own text held
    if _json_mode and not _emitted:
        data_stream().write(json.dumps({"error": message, "exit_code": code}, sort_keys=True) + "\n")
    else:
        sys.stderr.write(f"flywheel: error: {message}\n")
    return code
