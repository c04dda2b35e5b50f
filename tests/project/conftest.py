"""Fixtures of the end-to-end turn tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def turn_env(flywheel_home, install_tiny_quick, turn_instance):
    """A home with tiny-quick installed, its own Dagster instance, and no MLflow server from the environment."""
    install_tiny_quick(flywheel_home.models)
    return flywheel_home
