"""`flywheel` command line: one subcommand per module under `flywheel/commands/`.

Every command prints human text on a terminal and one JSON object with `--json`.
`main(argv)` returns the exit code, so tests call it directly.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from flywheel.commands.output import reserved_stdout

COMMAND_MODULES: tuple[str, ...] = (
    "ingest",
    "verify",
    "sandbox",
    "model",
    "train",
    "evaluate",
    "rollback",
    "turn",
)
"""Modules of `flywheel.commands`; each has `register(subparsers)` adding its parser with `func` set."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="flywheel", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(f"flywheel.commands.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    if getattr(args, "json", False):
        with reserved_stdout():
            return int(args.func(args) or 0)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
