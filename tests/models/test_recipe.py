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
