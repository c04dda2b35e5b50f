"""The tiny-model recipes build checkpoints vLLM's CPU attention can serve."""

from __future__ import annotations

import pytest

from flywheel.models.recipe import RECIPES

VLLM_CPU_HEAD_SIZES = {32, 64, 80, 96, 112, 128, 192, 256}
"""Head sizes vLLM's CPU attention kernels accept (measured: head_dim 24 dies on the first request)."""


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_head_dim_is_one_vllm_cpu_serves(name):
    r = RECIPES[name]
    assert r.hidden_size % r.n_heads == 0
    assert r.hidden_size // r.n_heads in VLLM_CPU_HEAD_SIZES


def test_earlier_releases_hash_as_before_the_later_fields():
    """agent_format and code_levels at their default leave the hash alone: tiny-v1/v2's cached builds stay valid."""
    assert RECIPES["tiny-v1"].hash() == "7c8e01783b4d422b"
    assert RECIPES["tiny-v2"].hash() == "1896c03177570dc8"
    for name in ("tiny-v1", "tiny-v2"):
        d = RECIPES[name].to_dict()
        assert "agent_format" not in d and "code_levels" not in d
        assert RECIPES[name].agent_format == "direct" and RECIPES[name].code_levels == (1,)


def test_tiny_v3_is_the_clean_base_taught_the_plan_and_every_code_level():
    from dataclasses import replace

    from flywheel.environments.code import CodeEnvironment

    v3, v2 = RECIPES["tiny-v3"], RECIPES["tiny-v2"]
    assert v3.math_noise == 0.0 and v3.agent_format == "plan" and v3.n_agent > v2.n_agent
    assert v3.code_levels == (CodeEnvironment.levels_ or (1,))
    assert v3.hash() not in {r.hash() for n, r in RECIPES.items() if n != "tiny-v3"}
    assert replace(v2, agent_format="plan").hash() != v2.hash()
    with pytest.raises(ValueError, match="agent_format"):
        replace(v2, agent_format="scratch")
