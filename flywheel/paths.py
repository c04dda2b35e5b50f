"""Where the embedded default keeps its state: one folder, `$FLYWHEEL_HOME` (default `./.flywheel`)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class FlywheelPaths:
    """Every on-disk location of one flywheel installation, derived from its home folder."""

    home: Path

    @classmethod
    def from_env(cls, home: str | os.PathLike[str] | None = None) -> FlywheelPaths:
        root = Path(home or os.environ.get("FLYWHEEL_HOME", ".flywheel")).resolve()
        return cls(home=root)

    @property
    def warehouse(self) -> Path:
        """The DuckDB file holding logs, quarantine, mining results, verdict cache, difficulty history."""
        return self.home / "warehouse.duckdb"

    @property
    def raw_logs(self) -> Path:
        """Daily folders of raw JSONL logs (`raw_logs/2026-12-01/*.jsonl`) for the demo traffic."""
        return self.home / "raw_logs"

    @property
    def mlflow_uri(self) -> str:
        """MLflow tracking and registry store: local SQLite."""
        return f"sqlite:///{self.home / 'mlflow.db'}"

    @property
    def mlflow_artifacts(self) -> Path:
        return self.home / "mlartifacts"

    @property
    def models(self) -> Path:
        """Base models (`models/base/<release>`) and trained policies (`models/policies/<run>`)."""
        return self.home / "models"

    @property
    def checkpoints(self) -> Path:
        return self.home / "checkpoints"

    @property
    def dagster_home(self) -> Path:
        return self.home / "dagster"

    def ensure(self) -> FlywheelPaths:
        for p in (self.home, self.raw_logs, self.mlflow_artifacts, self.models, self.checkpoints):
            p.mkdir(parents=True, exist_ok=True)
        return self
