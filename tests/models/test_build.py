"""The tiny model build: cached by recipe hash; `resolve_base_model` finds tiny releases and users' HF checkpoints."""

from __future__ import annotations

import json
import time

import pytest


def test_build_is_cached_by_recipe_hash(tiny_model_dir):
    from dataclasses import replace

    from flywheel.models.build import build_tiny_model, cached_build
    from flywheel.models.recipe import QUICK

    t0 = time.perf_counter()
    again = build_tiny_model(tiny_model_dir, QUICK)
    assert again.cached and time.perf_counter() - t0 < 5
    assert again.recipe_hash == QUICK.hash() and set(again.pass_rates) == {"math", "code", "agent"}
    assert cached_build(tiny_model_dir, replace(QUICK, seed=1)) is None  # another recipe: rebuild
    assert QUICK.hash() != replace(QUICK, seed=1).hash()


def test_resolve_base_model_tiny_and_hf(tiny_model_dir, flywheel_home):
    from flywheel.models import resolve_base_model

    hf = resolve_base_model(str(tiny_model_dir), flywheel_home)  # a path: the user's own checkpoint
    assert hf.kind == "hf" and hf.path == tiny_model_dir.resolve() and hf.vocab > 100
    assert hf.params == json.loads((tiny_model_dir / "flywheel_build.json").read_text())["params"]
    named = resolve_base_model(tiny_model_dir.name, flywheel_home, models_dir=tiny_model_dir.parent)  # not a tiny-v* name
    assert named.kind == "hf" and named.path == hf.path
    with pytest.raises(FileNotFoundError, match="no HF checkpoint folder"):
        resolve_base_model("qwen-not-here", flywheel_home)
