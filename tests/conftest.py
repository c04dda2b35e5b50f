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


@pytest.fixture(scope="session")
def docker_sandbox():
    """A `DockerSandbox` with its image, on `DOCKER_HOST` or the private engine `scripts/dockerd.sh` starts.

    Skips (saying why) only when no engine can start here; an engine started here is stopped at the end.
    """
    import subprocess
    from pathlib import Path

    from flywheel.sandbox.docker import DockerSandbox, engine_available

    ok, why = engine_available()
    script = Path(__file__).resolve().parents[1] / "scripts" / "dockerd.sh"
    started = False
    if not ok and not os.environ.get("FLYWHEEL_NO_DOCKER"):
        root = os.environ.get("FLYWHEEL_DOCKER_ROOT", "/tmp/flywheel-docker")
        r = subprocess.run(["bash", str(script), "start"], capture_output=True, text=True, timeout=300)
        if r.returncode == 0:
            started = True
            ok, why = engine_available(f"unix://{root}/docker.sock")
        else:
            reason = Path(root, "why").read_text().strip() if Path(root, "why").exists() else r.stderr.strip()
            why = f"{why}; scripts/dockerd.sh start failed: {reason}"
    try:
        if not ok:
            pytest.skip(f"no Docker engine can start here: {why}")
        sb = DockerSandbox()
        sb.ensure_image()
        yield sb
        sb.close()
    finally:
        if started:
            subprocess.run(["bash", str(script), "stop"], capture_output=True)
