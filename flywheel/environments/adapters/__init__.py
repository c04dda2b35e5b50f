"""Environments from the RL ecosystem, adapted to flywheel's `Environment` protocol: PrimeIntellect `verifiers`
packages (`verifiers_env.py`) and Inspect tasks (`inspect_env.py`).

`adapt(obj, name)` is the registry's hook: an entry point of group `flywheel.environments` whose target is a
`verifiers` package (a module with `load_environment`), a loaded `verifiers` environment, or an Inspect task
(a `@task` function; the registry calls it) comes back as a flywheel environment; anything else as it was.
"""

from __future__ import annotations

import importlib.metadata
import inspect
from typing import Any


def _version(module: Any) -> str:
    top = getattr(module, "__name__", "").split(".")[0]
    try:
        dists = importlib.metadata.packages_distributions().get(top) or []
        return importlib.metadata.version(dists[0]) if dists else ""
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return ""


def adapt(obj: Any, name: str) -> Any:
    """`obj` as a flywheel environment when it is an ecosystem one (see the module doc), else `obj`."""
    from flywheel.environments.adapters.inspect_env import InspectEnvironment, is_inspect_task
    from flywheel.environments.adapters.verifiers_env import VerifiersEnvironment, is_verifiers_env

    if hasattr(obj, "verify") and hasattr(obj, "domains"):
        return obj  # already a flywheel environment
    if is_verifiers_env(obj):
        version = _version(obj) if inspect.ismodule(obj) else _version(inspect.getmodule(type(obj)))
        return VerifiersEnvironment(obj, name, version)
    if is_inspect_task(obj):
        return InspectEnvironment(obj, name)
    return obj
