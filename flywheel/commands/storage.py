"""The CLI's storage default: the CLI's process environment names where data lives (`flywheel.paths`:
`FLYWHEEL_HOME`, default `./.flywheel`; `MLFLOW_TRACKING_URI`; `FLYWHEEL_BASE_MODELS_DIR`)."""

from __future__ import annotations

import os

from flywheel.paths import HOME_ENV, RELEASES_DIR_ENV, TRACKING_URI_ENV, FlywheelPaths, paths_from_environ

__all__ = ["HOME_ENV", "RELEASES_DIR_ENV", "TRACKING_URI_ENV", "storage_from_env"]


def storage_from_env() -> FlywheelPaths:
    """The installation this process's environment names (nothing is created: call `.ensure()` before writing)."""
    return paths_from_environ(os.environ)
