"""The GPU rollout engine: `vllm.LLM` in process, with in-place weight sync from the trainer.

Install with the `[gpu]` extra; vLLM is imported lazily so CPU machines never need it.
Same protocol and rollout record as the torch engine, same multi-step tool loop (it
only needs `sample_ids`). Weight sync: `update_weights(state_dict, version)` hands the
trainer's tensors to the running model's `load_weights` (no checkpoint written), through
`LLM.collective_rpc`/`apply_model` on current vLLM, or the in-process model runner on
older releases. Log-probs are requested as `processed_logprobs` (after temperature, like
the torch engine) where the installed vLLM supports it; older releases report raw
log-probs, which equal ours only at temperature 1.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from flywheel.rollout.base import ToolFactory
from flywheel.rollout.checkpoint import load_tokenizer
from flywheel.rollout.multistep import multistep_generate
from flywheel.rollout.torch_engine import Sample
from flywheel.rollout.types import Rollout, SamplingParams

_MISSING = ("vLLM is not installed: the vllm engine needs a CUDA machine and the `[gpu]` extra "
            "(pip install -e '.[gpu]'); use engine='torch' on CPU")


def _import_vllm() -> Any:
    try:
        import vllm  # optional: the [gpu] extra
    except ImportError as e:  # pragma: no cover - depends on the machine
        raise RuntimeError(_MISSING) from e
    return vllm


def _load_into(model: Any, weights: list[tuple[str, Any]]) -> int:
    model.load_weights(weights)
    return len(weights)


class VllmEngine:
    """Rollouts from a `vllm.LLM` over a local HF checkpoint folder (one GPU, TP=1)."""

    name = "vllm"

    def __init__(self, llm: Any, tokenizer: Any, policy_version: int = 0) -> None:
        self.llm = llm
        self.tokenizer = tokenizer
        self.policy_version = policy_version
        self.device = "cpu"  # where multistep's torch.Generator lives; vLLM seeds per request
        self.eos_id: int = tokenizer.eos_token_id
        self._calls = itertools.count()

    @classmethod
    def from_pretrained(cls, path: str | Path, dtype: str = "bfloat16", gpu_memory_utilization: float = 0.5,
                        max_model_len: int = 2048, enforce_eager: bool = True, seed: int = 0, **kw: Any) -> VllmEngine:
        vllm = _import_vllm()
        args: dict[str, Any] = dict(model=str(path), tokenizer=str(path), dtype=dtype, seed=seed,
                                    gpu_memory_utilization=gpu_memory_utilization, max_model_len=max_model_len,
                                    enforce_eager=enforce_eager, tensor_parallel_size=1, **kw)
        try:
            llm = vllm.LLM(logprobs_mode="processed_logprobs", **args)
        except TypeError:  # vLLM < 0.10.2: raw log-probs only
            llm = vllm.LLM(**args)
        return cls(llm, load_tokenizer(path))

    # -- weights -----------------------------------------------------------------------------
    def update_weights(self, state_dict: Mapping[str, Any], version: int) -> None:
        """Load the trainer's tensors into the running model (HF parameter names), tag `version`."""
        weights = [(k, v.detach()) for k, v in state_dict.items()]
        llm = self.llm
        if hasattr(llm, "apply_model"):  # vLLM >= 0.8.5 (V1): runs on every worker
            llm.apply_model(lambda model: _load_into(model, weights))
        else:
            executor = llm.llm_engine.model_executor
            worker = executor.driver_worker
            runner = getattr(worker, "worker", worker).model_runner  # V1 in-process wrapper, else V0
            _load_into(runner.model, weights)
        if hasattr(llm, "reset_prefix_cache"):
            llm.reset_prefix_cache()  # cached KV of the old weights must not be reused
        self.policy_version = int(version)

    # -- sampling ----------------------------------------------------------------------------
    def sample_ids(self, contexts: Sequence[Sequence[int]], sampling: SamplingParams,
                   max_new_tokens: int | Sequence[int] | None = None,
                   stop_token_ids: Sequence[set[int]] | set[int] | None = None,
                   stop_strings: Sequence[str] = (), generator: Any = None) -> list[Sample]:
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
                include_stop_str_in_output=True, skip_special_tokens=False, detokenize=True,
            )
            for i in range(n)
        ]
        prompts = [{"prompt_token_ids": list(c)} for c in contexts]
        outs = self.llm.generate(prompts, params, use_tqdm=False)
        res = []
        for o in outs:
            c = o.outputs[0]
            ids = list(c.token_ids)
            lps = [float(d[t].logprob) if d and t in d else 0.0 for t, d in zip(ids, c.logprobs or [{}] * len(ids), strict=False)]
            res.append(Sample(ids, lps, "length" if c.finish_reason == "length" else "stop"))
        return res

    def generate(self, prompts: Sequence[str], n_samples: int = 1, sampling: SamplingParams | None = None,
                 tools: Sequence[ToolFactory | None] | None = None, max_steps: int = 1) -> list[Rollout]:
        """Same contract as `TorchEngine.generate` (prompt-major, tools through the multi-step loop)."""
        sampling = sampling or SamplingParams()
        tl = list(tools) if tools is not None else [None] * len(prompts)
        return multistep_generate(self, prompts, n_samples, sampling, tl, max(1, max_steps))

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def decode_response(self, token_ids: Sequence[int]) -> str:
        ids = list(token_ids)
        if ids and ids[-1] == self.eos_id:
            ids = ids[:-1]
        return self.tokenizer.decode(ids, skip_special_tokens=False)
