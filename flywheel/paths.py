"""Where one flywheel installation keeps its state: one home folder, plus an optional MLflow server.

The library takes a `FlywheelPaths` as an argument and never reads the environment itself; the
CLI builds one with `flywheel.commands.storage.storage_from_env()`, Dagster with `StorageResource`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class FlywheelPaths:
    """Every location of one flywheel installation: derived from `home`, except two overrides.

    `tracking_uri`: an MLflow server (empty = SQLite under `home`); `releases_dir`: the folder
    new base-model checkpoints are dropped into (None = `home/models/base`).
    """

    home: Path
    tracking_uri: str = ""
    releases_dir: Path | None = None

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
        """The one MLflow tracking and registry URI: the server when one is set, else SQLite under home."""
        return self.tracking_uri or f"sqlite:///{self.home / 'mlflow.db'}"

    @property
    def mlflow_artifacts(self) -> Path:
        return self.home / "mlartifacts"

    @property
    def models(self) -> Path:
        """Base models (`models/base/<release>`) and trained policies (`models/policies/<run>`)."""
        return self.home / "models"

    @property
    def base_models(self) -> Path:
        """Where base-model releases are built or unpacked: `models/base/<release>`."""
        return self.models / "base"

    @property
    def releases(self) -> Path:
        """The folder the release sensor watches for new base-model checkpoints."""
        return self.releases_dir or self.base_models

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
