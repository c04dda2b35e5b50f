"""Turns compound: a turn trains from the champion when the champion descends from the same base model."""

from __future__ import annotations

from flywheel.registry.mlflow_registry import training_start


def _ckpt(tmp_path, name):
    d = tmp_path / name
    d.mkdir()
    (d / "config.json").write_text("{}")
    return d


def test_training_starts_from_the_champion_of_the_same_base_model(mlflow_registry, flywheel_home, tmp_path):
    uri, base = flywheel_home.mlflow_uri, str(_ckpt(tmp_path, "base"))
    assert training_start(uri, "tiny-v1", base) == (base, "base model tiny-v1")  # no champion yet
    ref = mlflow_registry.register(_ckpt(tmp_path, "cand"), {"base_model": "tiny-v1"})
    mlflow_registry.set_champion(ref.version)
    path, label = training_start(uri, "tiny-v1", base)
    assert path == ref.model_path and path != base and "champion" in label
    assert training_start(uri, "tiny-v1", base, init_from="base")[0] == base
    assert training_start(uri, "tiny-v1", base, init_from="rebase")[0] == ref.model_path  # the champion samples
    assert training_start(uri, "tiny-v2", base)[0] == base  # another base model's champion is not a start
