"""Shared fixtures: every test gets its own flywheel home, so tests never share state."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture
def flywheel_home(tmp_path, monkeypatch):
    """A fresh `$FLYWHEEL_HOME` for one test."""
    home = tmp_path / "flywheel_home"
    monkeypatch.setenv("FLYWHEEL_HOME", str(home))
    from flywheel.paths import FlywheelPaths

    return FlywheelPaths.from_env(home).ensure()


def pytest_collection_modifyitems(config, items):
    from flywheel.gpu import cuda_available

    if not cuda_available():
        skip = pytest.mark.skip(reason="needs a CUDA GPU; none here")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(skip)
