"""One GpuSpec -> k8s resource tags (as dagster-k8s reads them), the concurrency pool, the device."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from flywheel.gpu import GpuSpec, resolve_device
from resources.gpu import gpu_op_tags


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


def test_op_tags_parse_as_dagster_k8s_config():
    """The tag value is what dagster-k8s's run/step launcher parses into a pod (kubernetes models validate keys)."""
    k8s_job = pytest.importorskip("dagster_k8s.job", reason="dagster-k8s not installed (pip install dagster-k8s)")
    kubernetes = pytest.importorskip("kubernetes")
    from dagster_k8s.models import k8s_model_from_dict

    tags = gpu_op_tags(GpuSpec(count=4, kind="nvidia-a100"))
    assert isinstance(tags["dagster-k8s/config"], str) and json.loads(tags["dagster-k8s/config"])
    user = k8s_job.get_user_defined_k8s_config(tags)
    container = k8s_model_from_dict(kubernetes.client.V1Container, {"name": "step", **user.container_config})
    assert container.resources.limits == {"nvidia.com/gpu": "4"}
    pod = k8s_model_from_dict(kubernetes.client.V1PodSpec, {"containers": [{"name": "step"}], **user.pod_spec_config})
    assert pod.node_selector == {"nvidia.com/gpu.product": "nvidia-a100"}


def test_eval_asset_carries_its_gpu_spec():
    from assets.evaluation import EVAL_GPU, eval_report

    spec = eval_report.specs_by_key[next(iter(eval_report.keys))]
    tags = eval_report.op.tags
    assert json.loads(tags["dagster-k8s/config"])["container_config"]["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert eval_report.op.pool == EVAL_GPU.pool == "gpu-any"
    assert spec.group_name == "evaluation"


def test_pools_and_gpu_run_limit_in_dagster_yaml():
    cfg = yaml.safe_load((Path(__file__).resolve().parents[1] / "dagster.yaml").read_text())
    assert cfg["concurrency"]["pools"]["default_limit"] == 1  # one step per GPU pool at a time
    limits = {x["key"]: x["limit"] for x in cfg["concurrency"]["runs"]["tag_concurrency_limits"]}
    from assets.orchestration import base_model_job

    assert "flywheel/gpu" in base_model_job.tags and limits["flywheel/gpu"] == 1


def test_device_placement_without_gpu(monkeypatch):
    import flywheel.gpu as g

    monkeypatch.setattr(g, "cuda_available", lambda: False)
    assert resolve_device(GpuSpec(count=1), "auto") == "cpu"
    with pytest.raises(RuntimeError):
        resolve_device(GpuSpec(count=1), "cuda")
    assert resolve_device(GpuSpec(count=0), "auto") == "cpu"
