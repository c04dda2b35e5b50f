"""`flywheel rollback [--to VERSION]`: move the `champion` alias back to the previous champion."""

from __future__ import annotations

import argparse
from typing import Any

from flywheel.commands.argtypes import positive_int
from flywheel.commands.output import EXIT_FAILED, EXIT_INFRA, EXIT_USAGE, add_json_flag, emit, fail
from flywheel.commands.storage import storage_from_env


class RegistryLookupError(Exception):
    """The registry could not be opened as asked; `code` is the exit code (2: no such model, 3: unreachable)."""

    def __init__(self, message: str, code: int):
        super().__init__(message)
        self.code = code


def tracking_uri_from(args: argparse.Namespace) -> str:
    """--tracking-uri, else the storage's (`$MLFLOW_TRACKING_URI`, else the SQLite store under `$FLYWHEEL_HOME`)."""
    return args.tracking_uri or storage_from_env().ensure().mlflow_uri


def add_registry_flags(p: argparse.ArgumentParser) -> None:
    # loaded when the command runs, so `flywheel --help` stays fast
    from flywheel.registry.mlflow_registry import DEFAULT_MODEL_NAME

    p.add_argument("--tracking-uri", default=None, help="MLflow tracking/registry URI (default: $MLFLOW_TRACKING_URI, else $FLYWHEEL_HOME/mlflow.db)")
    p.add_argument("--model-name", default=DEFAULT_MODEL_NAME, help="registered model name")


def open_registry(args: argparse.Namespace) -> Any:
    """The `Registry` of --model-name, which must already exist: a command that reads the registry never
    creates a registered model (a misspelt --model-name is an error, not a new empty model)."""
    from mlflow import MlflowClient  # heavy: mlflow
    from mlflow.exceptions import MlflowException

    from flywheel.registry.mlflow_registry import Registry

    uri = tracking_uri_from(args)
    try:
        client = MlflowClient(tracking_uri=uri, registry_uri=uri)
        client.get_registered_model(args.model_name)
    except MlflowException as e:
        if e.error_code == "RESOURCE_DOES_NOT_EXIST":
            try:
                known = sorted(m.name for m in client.search_registered_models())
            except MlflowException:
                known = []
            raise RegistryLookupError(f"no registered model {args.model_name!r} in {uri} (registered: "
                                      f"{', '.join(known) or 'none yet'})", EXIT_USAGE) from None
        raise RegistryLookupError(f"MLflow at {uri} failed: {str(e).splitlines()[0]}", EXIT_INFRA) from None
    except OSError as e:  # a server that does not answer
        raise RegistryLookupError(f"MLflow at {uri} is unreachable: {e}", EXIT_INFRA) from None
    return Registry(uri, args.model_name)


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("rollback", help="move the champion alias back to the previous champion",
                              description=__doc__)
    p.add_argument("--to", dest="to_version", type=positive_int, default=None, metavar="VERSION",
                   help="roll back to this registered version instead of the previous champion")
    add_registry_flags(p)
    add_json_flag(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # loaded when the command runs, so `flywheel --help` stays fast
    from mlflow.exceptions import MlflowException

    from flywheel.registry.mlflow_registry import rollback

    try:
        reg = open_registry(args)
    except RegistryLookupError as e:
        return fail(str(e), e.code)
    try:
        r = rollback(reg, args.to_version)
    except ValueError as e:  # no previous champion: the registry is fine, there is nothing to go back to
        return fail(f"rollback failed: {str(e).splitlines()[0]}", EXIT_FAILED)
    except MlflowException as e:
        code = EXIT_USAGE if e.error_code == "RESOURCE_DOES_NOT_EXIST" else EXIT_INFRA
        return fail(f"rollback failed: {str(e).splitlines()[0]}", code)
    champ = reg.champion()
    result = {**r.to_dict(), "champion": champ.uri if champ else None,
              "model_path": champ.model_path if champ else None}
    emit(args, result, f"champion: {reg.name}:{r.from_version} -> {result['champion']} "
                       f"(history {' -> '.join(r.history)})")
    return 0
