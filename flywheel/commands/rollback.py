"""`flywheel rollback [--to VERSION]`: move the `champion` alias back to the previous champion."""

from __future__ import annotations

import argparse

from flywheel.commands.output import add_json_flag, emit, fail
from flywheel.commands.storage import storage_from_env


def tracking_uri_from(args: argparse.Namespace) -> str:
    """--tracking-uri, else the storage's (`$MLFLOW_TRACKING_URI`, else the SQLite store under `$FLYWHEEL_HOME`)."""
    return args.tracking_uri or storage_from_env().ensure().mlflow_uri


def add_registry_flags(p: argparse.ArgumentParser) -> None:
    # loaded when the command runs, so `flywheel --help` stays fast
    from flywheel.registry.mlflow_registry import DEFAULT_MODEL_NAME

    p.add_argument("--tracking-uri", default=None, help="MLflow tracking/registry URI (default: $MLFLOW_TRACKING_URI, else $FLYWHEEL_HOME/mlflow.db)")
    p.add_argument("--model-name", default=DEFAULT_MODEL_NAME, help="registered model name")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("rollback", help="move the champion alias back to the previous champion",
                              description=__doc__)
    p.add_argument("--to", dest="to_version", default=None, metavar="VERSION",
                   help="roll back to this registered version instead of the previous champion")
    add_registry_flags(p)
    add_json_flag(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # loaded when the command runs, so `flywheel --help` stays fast
    from mlflow.exceptions import MlflowException

    from flywheel.registry.mlflow_registry import Registry, rollback

    reg = Registry(tracking_uri_from(args), args.model_name)
    try:
        r = rollback(reg, args.to_version)
    except (ValueError, MlflowException) as e:
        return fail(f"rollback failed: {str(e).splitlines()[0]}")
    champ = reg.champion()
    result = {**r.to_dict(), "champion": champ.uri if champ else None,
              "model_path": champ.model_path if champ else None}
    emit(args, result, f"champion: {reg.name}:{r.from_version} -> {result['champion']} "
                       f"(history {' -> '.join(r.history)})")
    return 0
