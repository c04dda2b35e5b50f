"""The embedded default resources: everything local, under `$FLYWHEEL_HOME`."""

from __future__ import annotations

import importlib
from typing import Any

RESOURCE_FACTORIES: tuple[str, ...] = (
    "resources.gpu",
    "resources.warehouse",
    "resources.mlflow",
    "resources.sandbox",
    "resources.rollout",
    "resources.trainer",
)
"""Modules that may define `default_resources() -> dict[str, resource]`."""


def default_resources() -> dict[str, Any]:
    from resources.gpu import GpuResource

    out: dict[str, Any] = {"gpu": GpuResource()}
    for name in RESOURCE_FACTORIES:
        try:
            mod = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name != name:
                raise
            continue
        factory = getattr(mod, "default_resources", None)
        if factory:
            out.update(factory())
    return out
