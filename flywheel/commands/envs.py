"""`flywheel envs list`: the installed environments (entry points of `flywheel.environments`), their domains,
task counts, difficulty levels and versions. Exit 1 when some installed environment failed to load (each is
named with its entry point); the others are still listed."""

from __future__ import annotations

import argparse

from flywheel.commands.output import EXIT_FAILED, add_json_flag, emit, fail


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("envs", help="list the installed environments and their domains",
                              description=__doc__)
    sub = p.add_subparsers(dest="envs_command", metavar="ACTION")
    ls = sub.add_parser("list", help="each environment: family, version, domains, task counts",
                        description=__doc__.splitlines()[0])
    add_json_flag(ls)
    ls.set_defaults(func=run_list)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])


def run_list(args: argparse.Namespace) -> int:
    from flywheel.environments.catalog import catalog, text

    cat = catalog()
    emit(args, cat, text(cat))
    if cat["errors"]:
        return fail(f"{len(cat['errors'])} environment(s) failed to load: " + " | ".join(cat["errors"]),
                    EXIT_FAILED)
    return 0
