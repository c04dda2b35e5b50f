"""`flywheel` command line: the library's commands and those installed packages add.

One subcommand per module under `flywheel/commands/`, plus the commands other
installed packages add through the `flywheel.commands` entry point group (the Dagster code location adds `turn`).

Every command prints human text on a terminal and one JSON object with `--json` (errors too:
`{"error": ..., "exit_code": ...}`), and exits with one of the codes in docs/cli.md.
`main(argv)` returns the exit code, so tests call it directly (a usage error raises SystemExit(2), as in argparse).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import sys
import traceback
from typing import Any, NoReturn

from flywheel.commands import envs, evaluate, ingest, model, rollback, sandbox, serve, train, verify
from flywheel.commands.output import EXIT_CODES, EXIT_USAGE, exit_code_for, fail, json_errors, reserved_stdout

COMMAND_MODULES = (ingest, verify, sandbox, model, train, evaluate, rollback, serve, envs)
"""The library's commands; each module has `register(subparsers)` adding its parser with `func` set."""
COMMANDS_ENTRY_POINTS = "flywheel.commands"
"""Entry point group of commands other installed packages add: `name = "module:register"`."""


class StrictParser(argparse.ArgumentParser):
    """Every flywheel parser and subparser: flags must be spelt out (`--warehous` is an error, not
    `--warehouse`), and under --json a usage error is the one JSON object on stdout."""

    json_requested = False  # set by `main` from the raw argv, before parsing
    is_top = False  # the `flywheel` parser itself; every other one is a command's

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        """A command's parser reports an argument it does not know itself (`flywheel ingest: error: unrecognized
        arguments: --warehous`, see `flywheel ingest --help`), instead of argparse's top-level message."""
        ns, extras = super().parse_known_args(args, namespace)
        if extras and not self.is_top:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return ns, extras

    def error(self, message: str) -> NoReturn:
        """One line naming the command and what is wrong (not the whole usage: `--help` has that); exit 2."""
        if StrictParser.json_requested:
            sys.stdout.write(json.dumps({"error": f"{self.prog}: {message}", "exit_code": EXIT_USAGE},
                                        sort_keys=True) + "\n")
        else:
            sys.stderr.write(f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")
        sys.exit(EXIT_USAGE)


def package_version() -> str:
    """The installed `flywheel` distribution's version (pyproject.toml's, once installed)."""
    try:
        return importlib.metadata.version("flywheel")
    except importlib.metadata.PackageNotFoundError:
        return "unknown (not installed)"


def _run(args: argparse.Namespace) -> int:
    """The command, with an unexpected exception turned into its traceback on stderr, then one error line
    (one JSON object under --json) and the exit code `exit_code_for` gives it."""
    try:
        return int(args.func(args) or 0)
    except Exception as e:
        code = exit_code_for(e)
        if code != EXIT_USAGE:  # a bad file the user named is one line, not a traceback
            traceback.print_exc(file=sys.stderr)
        first = next((ln for ln in str(e).splitlines() if ln.strip()), "")
        return fail(f"{args.command} failed: {type(e).__name__}: {first}", code)


def build_parser() -> argparse.ArgumentParser:
    parser = StrictParser(prog="flywheel", description=__doc__.splitlines()[0],
                          epilog="exit codes: " + ", ".join(f"{c} {m.split(':')[0]}" for c, m in EXIT_CODES.items())
                          + " (docs/cli.md)")
    parser.is_top = True
    parser.add_argument("--version", action="version", version=f"flywheel {package_version()}")
    # subparsers are made with the parent's class (StrictParser), so every level rejects abbreviations
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMAND_MODULES:
        module.register(sub)
    for register in contributed_commands():
        register(sub)
    return parser


def contributed_commands() -> list[Any]:
    """The `register` functions installed packages add (sorted by name); a command whose name the library
    already uses, or whose target is not callable, is an error naming the entry point."""
    ours = {m.__name__.rsplit(".", 1)[1] for m in COMMAND_MODULES}
    found = []
    for ep in sorted(importlib.metadata.entry_points(group=COMMANDS_ENTRY_POINTS), key=lambda e: e.name):
        if ep.name in ours:
            raise RuntimeError(f"entry point {COMMANDS_ENTRY_POINTS}:{ep.name} ({ep.value}) names a built-in command")
        register = ep.load()
        if not callable(register):
            raise RuntimeError(f"entry point {COMMANDS_ENTRY_POINTS}:{ep.name} ({ep.value}) is not callable")
        found.append(register)
    return found


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    StrictParser.json_requested = "--json" in argv
    parser = build_parser()
    try:  # --help, --version and usage errors raise SystemExit (0, 0, 2) as argparse does
        args = parser.parse_args(argv)
    finally:
        StrictParser.json_requested = False
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USAGE
    with json_errors(bool(getattr(args, "json", False))):
        if getattr(args, "json", False):
            with reserved_stdout():
                return _run(args)
        return _run(args)


if __name__ == "__main__":
    sys.exit(main())
