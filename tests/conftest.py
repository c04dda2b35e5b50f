"""Shared fixtures: every test gets its own flywheel home, so tests never share state."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture
def flywheel_home(tmp_path, monkeypatch):
    """A fresh `$FLYWHEEL_HOME` for one test (no MLflow server, no releases folder from the environment):
    what the CLI's `storage_from_env()` and the default `StorageResource` both see."""
    from flywheel.commands.storage import HOME_ENV, RELEASES_DIR_ENV, TRACKING_URI_ENV, storage_from_env

    monkeypatch.setenv(HOME_ENV, str(tmp_path / "flywheel_home"))
    monkeypatch.delenv(TRACKING_URI_ENV, raising=False)
    monkeypatch.delenv(RELEASES_DIR_ENV, raising=False)
    return storage_from_env().ensure()


@pytest.fixture
def storage(flywheel_home):
    """The Dagster `StorageResource` of `flywheel_home`."""
    from resources.storage import StorageResource

    return StorageResource(home=str(flywheel_home.home))


def pytest_collection_modifyitems(config, items):
    from flywheel.gpu import cuda_available

    if not cuda_available():
        skip = pytest.mark.skip(reason="needs a CUDA GPU; none here")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(skip)
