"""One GpuSpec -> k8s resource tags (as dagster-k8s reads them), and the device it places work on."""

from __future__ import annotations

import pytest

from flywheel.gpu import GpuSpec, resolve_device


def test_k8s_tags_from_gpu_spec():
    tags = GpuSpec(count=2, min_memory_gb=80, kind="nvidia-h100").k8s_tags(cpu="8", memory="64Gi")
    cfg = tags["dagster-k8s/config"]
    res = cfg["container_config"]["resources"]
    assert res["requests"] == {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "2"}
    assert res["limits"] == {"nvidia.com/gpu": "2"}
    assert cfg["pod_spec_config"]["node_selector"] == {"nvidia.com/gpu.product": "nvidia-h100"}
    cpu_only = GpuSpec(count=0).k8s_tags()["dagster-k8s/config"]
    assert "nvidia.com/gpu" not in cpu_only["container_config"]["resources"]["requests"]
    assert cpu_only["pod_spec_config"] == {}


def test_device_placement_without_gpu(monkeypatch):
    import flywheel.gpu as g

    monkeypatch.setattr(g, "cuda_available", lambda: False)
    assert resolve_device(GpuSpec(count=1), "auto") == "cpu"
    with pytest.raises(RuntimeError):
        resolve_device(GpuSpec(count=1), "cuda")
    assert resolve_device(GpuSpec(count=0), "auto") == "cpu"


_SAVE = """
import sys
from transformers import GPT2Config, GPT2LMHeadModel
if sys.argv[1] == "quiet":
    from flywheel.progress import quiet_transformers_bars
    quiet_transformers_bars()
GPT2LMHeadModel(GPT2Config(n_layer=1, n_head=1, n_embd=8, vocab_size=16, n_positions=8)).save_pretrained(sys.argv[2])
"""


def test_saving_a_model_on_cpu_prints_no_deepspeed_accelerator_warning(tmp_path):
    """issue 27: every CPU turn printed DeepSpeed's 'Setting accelerator to CPU' warning: transformers'
    save_pretrained imports DeepSpeed (accelerate's model unwrapping), whose auto-detection warns."""
    import importlib.util
    import os
    import subprocess
    import sys

    from flywheel.gpu import cuda_available

    if importlib.util.find_spec("deepspeed") is None or cuda_available():
        pytest.skip("needs DeepSpeed installed on a machine without a CUDA GPU")
    env = {k: v for k, v in os.environ.items() if k != "DS_ACCELERATOR"}

    def output(mode: str) -> str:  # DeepSpeed's logger writes to stdout
        out = subprocess.run([sys.executable, "-c", _SAVE, mode, str(tmp_path / mode)], env=env, capture_output=True,
                             text=True, timeout=300)
        assert out.returncode == 0, out.stderr[-2000:]
        return out.stdout + out.stderr

    assert "Setting accelerator to CPU" in output("plain")  # what every turn printed
    assert "Setting accelerator to CPU" not in output("quiet")
