"""The vLLM serving manifest of a registered policy: serving is vLLM's job, not ours.

The manifest holds the `vllm serve` arguments of two variants for its target device
(`cuda` when the GpuSpec asks for GPUs, else `cpu`):
- `default`: prefix caching, tensor parallel over the GpuSpec's GPUs, the project's chat
  template (written into the model folder), loopback only. On GPU with chunked prefill; on
  CPU without it (seeded requests and chunked prefill crash vLLM's CPU engine), float32
  (bfloat16 crashes its CPU rotary kernel) and an explicit KV cache size.
- `fast`: fp8 weights and KV cache plus n-gram speculative decoding, for latency at a small
  quality risk that evaluation should confirm. GPU only: it `requires` cuda, and on a CPU
  target it is listed as not runnable there (`flywheel serve` refuses it).
Every variant's arguments parse with vLLM's own argument parser (tests/vllm). Written as
JSON and YAML next to the model.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from flywheel.gpu import GpuSpec
from flywheel.rollout.chat import CHAT_TEMPLATE_FILE, write_chat_template

NGRAM_SPECULATIVE = {"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 4, "prompt_lookup_min": 2}
VARIANT_REQUIRES = {"default": ("cpu", "cuda"), "fast": ("cuda",)}
"""The devices each variant starts on (fp8 and speculative decoding are GPU-only in vLLM)."""


def vllm_args(
    model_path: str, served_name: str, gpu: GpuSpec, fast: bool = False, port: int = 8000,
    host: str = "127.0.0.1", max_model_len: int | None = None, device: str = "cuda", cpu_kv_cache_gib: float = 1.0,
) -> list[str]:
    """`vllm serve` argv (without the leading `vllm serve`) for `device` ("cuda" | "cpu")."""
    args = [
        str(model_path),
        "--served-model-name", served_name,
        "--tensor-parallel-size", str(max(1, gpu.count)),
        "--enable-prefix-caching",
        "--enable-chunked-prefill" if device == "cuda" else "--no-enable-chunked-prefill",
        "--chat-template", str(Path(model_path) / CHAT_TEMPLATE_FILE),
        "--host", host,
        "--port", str(port),
    ]
    if device == "cpu":
        # an explicit KV cache: by default vLLM's CPU backend reserves a share of the whole machine's memory
        args += ["--dtype", "float32", "--kv-cache-memory-bytes", str(int(cpu_kv_cache_gib * 2**30))]
    if max_model_len:
        args += ["--max-model-len", str(max_model_len)]
    if fast:
        args += ["--quantization", "fp8", "--kv-cache-dtype", "fp8",
                 "--speculative-config", json.dumps(NGRAM_SPECULATIVE, separators=(",", ":"))]
    return args


def serving_manifest(
    model_path: str | Path, served_name: str, gpu: GpuSpec | None = None,
    max_model_len: int | None = None, port: int = 8000, device: str | None = None,
) -> dict[str, Any]:
    """Both variants' argv and shell command for `device` (default: cuda if the GpuSpec asks for GPUs,
    else cpu), what each requires and whether it runs on that device."""
    gpu = gpu or GpuSpec(count=1)
    device = device or ("cuda" if gpu.count > 0 else "cpu")
    if device not in ("cpu", "cuda"):
        raise ValueError(f"serving device must be cpu or cuda, got {device!r}")
    variants = {}
    for name, fast in (("default", False), ("fast", True)):
        argv = vllm_args(str(model_path), served_name, gpu, fast=fast, port=port, max_model_len=max_model_len,
                         device=device)
        variants[name] = {"args": argv, "command": "vllm serve " + shlex.join(argv),
                          "module_command": "python -m vllm.entrypoints.openai.api_server --model "
                                            + shlex.join([argv[0]]) + " " + shlex.join(argv[1:]),
                          "requires": list(VARIANT_REQUIRES[name]), "runs_on_target": device in VARIANT_REQUIRES[name]}
    return {
        "engine": "vllm",
        "device": device,
        "model_path": str(model_path),
        "served_model_name": served_name,
        "gpu": {"count": max(1, gpu.count), "min_memory_gb": gpu.min_memory_gb, "kind": gpu.kind},
        "openai_base_url": f"http://127.0.0.1:{port}/v1",
        "variants": variants,
        "notes": "fast = fp8 weights/KV cache + ngram speculative decoding (GPU only); evaluate it before serving "
                 "it. Chat requests pass the task's domain as chat_template_kwargs={'domain': ...}.",
    }


def write_serving_manifest(out_dir: str | Path, manifest: dict[str, Any]) -> dict[str, Path]:
    """`serving.json`, `serving.yaml` and the chat template the manifest names, under `out_dir` (the model)."""
    import yaml  # optional: the YAML manifest is written only when asked

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "serving.json").write_text(json.dumps(manifest, indent=2))
    (out / "serving.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    return {"json": out / "serving.json", "yaml": out / "serving.yaml", "chat_template": write_chat_template(out)}
