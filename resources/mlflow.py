"""MlflowResource: where training and evaluation runs are tracked (local SQLite by default)."""

from __future__ import annotations

from typing import Any

import dagster as dg
from pydantic import Field


class MlflowResource(dg.ConfigurableResource):
    """`tracking_uri` empty = `$FLYWHEEL_HOME/mlflow.db` (SQLite); point it at a server with e.g.
    `dg.EnvVar("MLFLOW_TRACKING_URI")` (credentials stay in the environment, never in params)."""

    tracking_uri: str = Field(default="", description="MLflow tracking URI; empty = local SQLite under FLYWHEEL_HOME")
    experiment: str = Field(default="flywheel-rlvr", description="experiment of the training runs")

    def uri(self) -> str:
        if self.tracking_uri:
            return self.tracking_uri
        from flywheel.paths import FlywheelPaths

        return FlywheelPaths.from_env().mlflow_uri

    def telemetry(self) -> Any:
        """A `flywheel.train.telemetry.Telemetry` bound to this store."""
        from flywheel.paths import FlywheelPaths
        from flywheel.train.telemetry import Telemetry

        return Telemetry(self.uri(), experiment=self.experiment, artifact_root=FlywheelPaths.from_env().ensure().mlflow_artifacts)


def default_resources() -> dict[str, Any]:
    return {"mlflow": MlflowResource()}
