"""The CLI's storage default: the one place in `flywheel` that reads where data lives from the environment.

`FLYWHEEL_HOME` (default `./.flywheel`) holds the warehouse, models, checkpoints and the local
MLflow store; `MLFLOW_TRACKING_URI` points MLflow at a server instead; `FLYWHEEL_BASE_MODELS_DIR`
is the folder watched for new base-model releases (default `$FLYWHEEL_HOME/models/base`).
"""

from __future__ import annotations

import os
from pathlib import Path

from flywheel.paths import FlywheelPaths

HOME_ENV = "FLYWHEEL_HOME"
TRACKING_URI_ENV = "MLFLOW_TRACKING_URI"
RELEASES_DIR_ENV = "FLYWHEEL_BASE_MODELS_DIR"


def storage_from_env() -> FlywheelPaths:
    """The installation the environment names (nothing is created: call `.ensure()` before writing)."""
    releases = os.environ.get(RELEASES_DIR_ENV)
    return FlywheelPaths(home=Path(os.environ.get(HOME_ENV) or ".flywheel").resolve(),
                         tracking_uri=os.environ.get(TRACKING_URI_ENV, ""),
                         releases_dir=Path(releases).resolve() if releases else None)
