"""The one place the flywheel's Definitions are assembled: assets, checks, jobs, schedules, sensors, resources."""

from __future__ import annotations

from types import ModuleType

import dagster as dg

from flywheel_dagster.assets import (
    canary,
    deployment,
    evaluation,
    history,
    logs,
    mining,
    models,
    monitoring,
    orchestration,
    traffic,
    training,
    verifiers,
)
from flywheel_dagster.resources.defaults import default_resources

STAGE_MODULES: tuple[ModuleType, ...] = (
    traffic, logs, mining, verifiers, models, training, evaluation, deployment, canary, history, orchestration, monitoring,
)
"""The stage modules, in flywheel order; each may export ASSETS, CHECKS, JOBS, SCHEDULES, SENSORS lists."""


def _collect(attr: str) -> list:
    return [x for m in STAGE_MODULES for x in getattr(m, attr, [])]


def build_definitions() -> dg.Definitions:
    """Every stage's definitions with the embedded default resources."""
    return dg.Definitions(
        assets=_collect("ASSETS"),
        asset_checks=_collect("CHECKS"),
        jobs=_collect("JOBS"),
        schedules=_collect("SCHEDULES"),
        sensors=_collect("SENSORS"),
        resources=default_resources(),
    )


defs = build_definitions()
