"""The vLLM serving manifest of a registered policy: serving is vLLM's job, not ours.

The manifest holds the `vllm serve` arguments for two variants: `default` (bf16, prefix
caching, chunked prefill, tensor parallel over the GpuSpec's GPUs) and `fast` (fp8
weights and KV cache plus n-gram speculative decoding, for latency at a small quality
risk that evaluation should confirm). Written as JSON and YAML next to the model.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from flywheel.gpu import GpuSpec

NGRAM_SPECULATIVE = {"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 4, "prompt_lookup_min": 2}


def vllm_args(
    model_path: str, served_name: str, gpu: GpuSpec, fast: bool = False, port: int = 8000,
    host: str = "127.0.0.1", max_model_len: int | None = None,
) -> list[str]:
    """`vllm serve` argv (without the leading `vllm serve`)."""
    args = [
        str(model_path),
        "--served-model-name", served_name,
        "--tensor-parallel-size", str(max(1, gpu.count)),
        "--enable-prefix-caching",
        "--enable-chunked-prefill",
        "--host", host,
        "--port", str(port),
    ]
    if max_model_len:
        args += ["--max-model-len", str(max_model_len)]
    if fast:
        args += ["--quantization", "fp8", "--kv-cache-dtype", "fp8",
                 "--speculative-config", json.dumps(NGRAM_SPECULATIVE, separators=(",", ":"))]
    return args


def serving_manifest(
    model_path: str | Path, served_name: str, gpu: GpuSpec | None = None,
    max_model_len: int | None = None, port: int = 8000,
) -> dict[str, Any]:
    """Both variants' argv and shell command, plus what they need (GPUs, kind)."""
    gpu = gpu or GpuSpec(count=1)
    variants = {}
    for name, fast in (("default", False), ("fast", True)):
        argv = vllm_args(str(model_path), served_name, gpu, fast=fast, port=port, max_model_len=max_model_len)
        variants[name] = {"args": argv, "command": "vllm serve " + shlex.join(argv)}
    return {
        "engine": "vllm",
        "model_path": str(model_path),
        "served_model_name": served_name,
        "gpu": {"count": max(1, gpu.count), "min_memory_gb": gpu.min_memory_gb, "kind": gpu.kind},
        "openai_base_url": f"http://127.0.0.1:{port}/v1",
        "variants": variants,
        "notes": "fast = fp8 weights/KV cache + ngram speculative decoding; evaluate it before serving it.",
    }


def write_serving_manifest(out_dir: str | Path, manifest: dict[str, Any]) -> dict[str, Path]:
    """`serving.json` and `serving.yaml` under `out_dir` (next to the model)."""
    import yaml  # optional: the YAML manifest is written only when asked

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "serving.json").write_text(json.dumps(manifest, indent=2))
    (out / "serving.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    return {"json": out / "serving.json", "yaml": out / "serving.yaml"}
