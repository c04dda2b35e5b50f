"""`--engine vllm` on `flywheel evaluate` and `flywheel train`: vLLM samples, or the command says how to get it."""

from __future__ import annotations

import json

import pytest


def _has_vllm() -> bool:
    from flywheel.rollout.vllm_engine import vllm_available

    return vllm_available()


def test_train_with_the_vllm_engine_says_how_to_get_vllm_where_it_is_missing(flywheel_home, policy_dir, capsys):
    if _has_vllm():
        pytest.skip("vllm is installed here")
    from flywheel.cli import main

    assert main(["train", "--engine", "vllm", "--base-model", str(policy_dir), "--rft-steps", "1", "--json"]) == 2
    assert "docs/vllm.md" in json.loads(capsys.readouterr().out)["error"]


@pytest.mark.vllm
def test_evaluate_with_the_vllm_engine_matches_the_torch_engine_greedy(flywheel_home, policy_dir, capsys,
                                                                     require_vllm):
    from flywheel.cli import main

    common = [str(policy_dir), "--tasks", "math:3", "--n-samples", "1", "--json"]
    rates = {}
    for engine in ("torch", "vllm"):
        assert main(["evaluate", *common, "--engine", engine]) == 0
        rates[engine] = json.loads(capsys.readouterr().out)["greedy_rates"]
    assert rates["vllm"] == rates["torch"]  # greedy answers are the same tokens on both engines
