"""Install an ecosystem environment package from this folder the way test_thirdparty does: `pip install --target`
(offline, no deps, no build isolation), put on sys.path, the registry rediscovered; undone afterwards."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from flywheel.environments.registry import reload_environments

HERE = Path(__file__).parent


@pytest.fixture(scope="module")
def install_env(tmp_path_factory) -> Callable:
    added: list[tuple[str, str]] = []

    def install(folder: str, module: str):
        target = tmp_path_factory.mktemp("site")
        src = tmp_path_factory.mktemp("src") / folder
        shutil.copytree(HERE / folder, src)  # pip builds in the source folder: keep tests/ clean
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                        "--no-index", "--target", str(target), str(src)], check=True, timeout=300)
        sys.path.insert(0, str(target))
        added.append((str(target), module))
        return reload_environments()

    yield install
    for target, module in added:
        sys.path.remove(target)
        sys.modules.pop(module, None)
    reload_environments()
