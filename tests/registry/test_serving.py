"""The vLLM serving manifest follows the GPU spec: tensor parallelism, fp8 and speculative variants, loopback."""

from __future__ import annotations

import json

from flywheel.gpu import GpuSpec
from flywheel.registry.serving import serving_manifest, write_serving_manifest


def test_serving_manifest_uses_gpu_spec(tmp_path, tiny_model_dir):
    import shutil

    shutil.copytree(tiny_model_dir, tmp_path / "m")  # a checkpoint: the manifest writes its chat template beside it
    m = serving_manifest(tmp_path / "m", "flywheel-policy:3", GpuSpec(count=4, kind="nvidia-h100"))
    default, fast = m["variants"]["default"]["args"], m["variants"]["fast"]["args"]
    assert default[default.index("--tensor-parallel-size") + 1] == "4"
    assert "--enable-prefix-caching" in default and "--enable-chunked-prefill" in default
    assert "--quantization" not in default
    assert fast[fast.index("--quantization") + 1] == "fp8"
    spec = json.loads(fast[fast.index("--speculative-config") + 1])
    assert spec["method"] == "ngram"
    assert m["variants"]["default"]["command"].startswith("vllm serve ")
    assert "127.0.0.1" in default  # loopback unless configured
    paths = write_serving_manifest(tmp_path / "m", m)
    import yaml

    assert yaml.safe_load(paths["yaml"].read_text()) == json.loads(paths["json"].read_text())
    assert paths["chat_template"].read_text().strip()  # the checkpoint's own template, what --chat-template names
    cpu = serving_manifest("p", "x", GpuSpec(count=0))
    assert cpu["variants"]["default"]["args"][cpu["variants"]["default"]["args"].index("--tensor-parallel-size") + 1] == "1"
