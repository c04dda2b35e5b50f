"""The one place the flywheel's Definitions are assembled: assets, checks, jobs, schedules, sensors, resources."""

from __future__ import annotations

import importlib
from types import ModuleType

import dagster as dg

STAGE_MODULES: tuple[str, ...] = (
    "assets.logs",
    "assets.mining",
    "assets.verifiers",
    "assets.models",
    "assets.training",
    "assets.evaluation",
    "assets.deployment",
    "assets.orchestration",
)
"""Each stage module may export ASSETS, CHECKS, JOBS, SCHEDULES, SENSORS lists."""


def _stage_modules() -> list[ModuleType]:
    mods = []
    for name in STAGE_MODULES:
        try:
            mods.append(importlib.import_module(name))
        except ModuleNotFoundError as e:
            if e.name != name:
                raise
    return mods


def _collect(attr: str) -> list:
    return [x for m in _stage_modules() for x in getattr(m, attr, [])]


def build_definitions() -> dg.Definitions:
    from resources.defaults import default_resources

    return dg.Definitions(
        assets=_collect("ASSETS"),
        asset_checks=_collect("CHECKS"),
        jobs=_collect("JOBS"),
        schedules=_collect("SCHEDULES"),
        sensors=_collect("SENSORS"),
        resources=default_resources(),
    )


defs = build_definitions()
