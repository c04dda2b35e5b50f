"""Fixtures of the end-to-end turn tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def turn_env(flywheel_home, install_tiny_quick, tmp_path, monkeypatch):
    """A home with tiny-quick installed, its own Dagster instance, and no MLflow server from the environment."""
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    install_tiny_quick(flywheel_home.models)
    return flywheel_home
