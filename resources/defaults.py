"""The embedded default resources, chosen in one place: everything local, under the storage home."""

from __future__ import annotations

from typing import Any

from flywheel_dagster.resources import alerts, ray, rollout, sandbox, storage, trainer
from flywheel_dagster.resources.gpu import GpuResource


def default_resources() -> dict[str, Any]:
    """Every resource the assets name: storage (`$FLYWHEEL_HOME`), CPU/GPU placement, sandbox, engines, trainer,
    Ray (off: the fleets run in process), alert delivery and the rollback rule."""
    return {"gpu": GpuResource(), **storage.default_resources(), **sandbox.default_resources(),
            **rollout.default_resources(), **trainer.default_resources(), **ray.default_resources(),
            **alerts.default_resources()}
