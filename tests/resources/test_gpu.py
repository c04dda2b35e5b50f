"""`gpu_op_tags`: the tag value is what dagster-k8s parses into a pod spec."""

from __future__ import annotations

import json

import pytest

from flywheel.gpu import GpuSpec
from flywheel_dagster.resources.gpu import gpu_op_tags


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
