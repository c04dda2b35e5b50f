"""The tiny model for tests: the `tiny-quick` recipe, built once per session (cached by recipe hash)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    """A built `tiny-quick` checkpoint folder (same folder for every module: the build cache hits)."""
    import torch

    from flywheel.models.build import build_tiny_model
    from flywheel.models.recipe import QUICK

    torch.set_num_threads(1)
    out = tmp_path_factory.getbasetemp() / "tiny-quick-model"
    return build_tiny_model(out, QUICK).path


@pytest.fixture(scope="session")
def tiny_model(tiny_model_dir):
    """(model, tokenizer) loaded once per session: tests must not change its weights in place."""
    from flywheel.rollout.checkpoint import load_model

    return load_model(tiny_model_dir)


def install_tiny_quick(src: Path, home_models: Path) -> Path:
    """Copy the session build to `<home>/models/base/tiny-quick`, so an asset run finds it cached."""
    dst = home_models / "base" / "tiny-quick"
    if not dst.exists():
        shutil.copytree(src, dst)
    return dst
