"""The `eval_report` asset's placement: its GPU spec becomes dagster-k8s tags and a concurrency pool."""

from __future__ import annotations

import json


def test_eval_asset_carries_its_gpu_spec():
    from flywheel_dagster.assets.evaluation import EVAL_GPU, eval_report

    spec = eval_report.specs_by_key[next(iter(eval_report.keys))]
    tags = eval_report.op.tags
    assert json.loads(tags["dagster-k8s/config"])["container_config"]["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert eval_report.op.pool == EVAL_GPU.pool == "gpu-any"
    assert spec.group_name == "evaluation"
