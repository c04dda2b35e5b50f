"""benchmarks/gpu_check.sh without a GPU: it measures nothing and says so, in its one JSON line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_gpu_check_on_cpu_marks_every_gpu_figure_not_measured():
    from flywheel.gpu import cuda_available

    if cuda_available():
        pytest.skip("a GPU is here: the check would measure (minutes)")
    out = subprocess.run(["bash", str(REPO / "benchmarks" / "gpu_check.sh")], capture_output=True, text=True,
                         timeout=300, check=True, env={**os.environ, "PYTHON": sys.executable}).stdout
    fig = json.loads(out.strip().splitlines()[-1])
    assert fig["device"] == "cpu"
    for key in ("vllm_tokens_per_s", "torch_tokens_per_s", "vllm_full_sync_ms", "vllm_adapter_sync_ms",
                "deepspeed_zero2_step_s", "lora_step_s", "lora_grpo_step_s"):
        assert fig[key] == "not measured", key
