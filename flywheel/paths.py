"""Where one flywheel installation keeps its state: one home folder, plus an optional MLflow server.

The library takes a `FlywheelPaths` as an argument and never reads the environment itself; the
CLI entry point and Dagster's `StorageResource` each hand `paths_from_environ` their process environment.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

HOME_ENV = "FLYWHEEL_HOME"
"""The home folder (default `./.flywheel`): warehouse, models, checkpoints, the local MLflow store."""
TRACKING_URI_ENV = "MLFLOW_TRACKING_URI"
"""An MLflow server instead of SQLite under the home."""
RELEASES_DIR_ENV = "FLYWHEEL_BASE_MODELS_DIR"
"""The folder watched for new base-model releases (default `$FLYWHEEL_HOME/models/base`)."""
DEFAULT_HOME = ".flywheel"
RECIPE_FILE, BUILD_FILE = "flywheel_recipe.json", "flywheel_build.json"
"""In a tiny base model's folder: the recipe it was built from, and what its build measured."""


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


def paths_from_environ(environ: Mapping[str, str]) -> FlywheelPaths:
    """The installation an environment names (nothing created: call `.ensure()` before writing); the caller
    passes its environment in, so the library itself never reads one."""
    releases = environ.get(RELEASES_DIR_ENV)
    return FlywheelPaths(home=Path(environ.get(HOME_ENV) or DEFAULT_HOME).resolve(),
                         tracking_uri=environ.get(TRACKING_URI_ENV, ""),
                         releases_dir=Path(releases).resolve() if releases else None)
