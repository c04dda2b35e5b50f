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
