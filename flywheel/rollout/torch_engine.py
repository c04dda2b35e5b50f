"""The default rollout engine: batched sampling with a KV cache, in process, on CPU or GPU.

One loop, top to bottom: group contexts of similar length into batches, left-pad them,
prefill once, then one token per step
for the still-active sequences only (finished rows are dropped from the batch and its
KV cache, which is where most of the speed over `model.generate` comes from on mixed
lengths). Sampling is seeded with a `torch.Generator`, so the same prompts, params and
seed give the same tokens.

Log-probs: for each sampled token, `log_softmax(logits / T)[token]` where `T` is the
sampling temperature, i.e. the temperature-scaled policy before top-p truncation (equal
to the sampling distribution when `top_p == 1`, the default). With `T == 0` (greedy)
it is `log_softmax(logits)[token]`. A plain forward pass over prompt+response gives the
same numbers (`recompute_logprobs`), which is what PPO ratios need.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from flywheel.rollout import kv_llama
from flywheel.rollout.base import ToolFactory
from flywheel.rollout.checkpoint import load_model
from flywheel.rollout.multistep import multistep_generate
from flywheel.rollout.types import Rollout, SamplingParams


@dataclass
class Sample:
    """What one context continued with: sampled ids, their log-probs, and why it stopped."""

    token_ids: list[int]
    logprobs: list[float]
    finish_reason: str  # "stop" (EOS / stop token / stop string) | "length"


def _temperature_logprobs(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """The log-prob distribution the engine reports (see module docstring)."""
    t = temperature if temperature > 0 else 1.0
    return torch.log_softmax(logits.float() / t, dim=-1)


def _draw(logp: torch.Tensor, sampling: SamplingParams, gen: torch.Generator) -> torch.Tensor:
    if sampling.temperature <= 0:
        return logp.argmax(dim=-1)
    probs = logp.exp()
    if sampling.top_p < 1.0:
        sp, si = probs.sort(dim=-1, descending=True)
        keep = sp.cumsum(-1) - sp < sampling.top_p  # always keeps the top token
        sp = sp * keep
        choice = torch.multinomial(sp, 1, generator=gen).squeeze(-1)
        return si.gather(-1, choice[:, None]).squeeze(-1)
    return torch.multinomial(probs, 1, generator=gen).squeeze(-1)


def _cache_kwarg(model: Any) -> str:
    """transformers >= 5.2x calls the KV cache argument `cache`; older releases `past_key_values`."""
    model = kv_llama.hf_model(model)  # a peft wrapper's forward takes **kwargs: ask the model under it
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


class TorchEngine:
    """Rollouts from an in-process `transformers` causal LM (the tiny model or any HF checkpoint)."""

    name = "torch"

    def __init__(self, model: Any, tokenizer: Any, device: str | torch.device | None = None,
                 policy_version: int = 0, max_batch_size: int = 64, num_threads: int | None = None,
                 fast_path: bool = True) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.device = torch.device(device) if device is not None else next(model.parameters()).device
        if next(model.parameters()).device != self.device:
            self.model.to(self.device)
        self.policy_version = policy_version
        self.max_batch_size = max_batch_size
        self.num_threads = num_threads
        self.fast_path = fast_path  # preallocated-KV decode for Llama/Qwen2 (kv_llama); else DynamicCache
        self.eos_id: int = tokenizer.eos_token_id
        self.pad_id: int = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else self.eos_id
        self._cache_kw = _cache_kwarg(model)

    @classmethod
    def from_pretrained(cls, path: str | Path, device: str = "cpu", dtype: str = "float32", **kw: Any) -> TorchEngine:
        """Load an HF checkpoint folder (see `flywheel.rollout.checkpoint.load_model`) into a new engine."""
        model, tok = load_model(path, device=device, dtype=dtype)
        return cls(model, tok, device=device, **kw)

    # -- weights -----------------------------------------------------------------------------
    def update_weights(self, state_dict: Mapping[str, Any], version: int) -> None:
        """Copy the trainer's weights in place (no disk round trip) and tag later rollouts `version`."""
        with torch.no_grad():
            own = self.model.state_dict()
            missing = [k for k in state_dict if k not in own]
            if missing:
                raise KeyError(f"update_weights: unknown parameters {missing[:5]}")
            for k, v in state_dict.items():
                own[k].copy_(v.to(own[k].device, own[k].dtype))
        self.policy_version = int(version)

    # -- the sampling loop -------------------------------------------------------------------
    @torch.no_grad()
    def sample_ids(
        self,
        contexts: Sequence[Sequence[int]],
        sampling: SamplingParams,
        max_new_tokens: int | Sequence[int] | None = None,
        stop_token_ids: Sequence[set[int]] | set[int] | None = None,
        stop_strings: Sequence[str] = (),
        generator: torch.Generator | None = None,
    ) -> list[Sample]:
        """Continue each context (token ids) until EOS, a stop token/string, or its token budget."""
        n = len(contexts)
        budgets = [sampling.max_new_tokens if max_new_tokens is None else max_new_tokens] * n \
            if max_new_tokens is None or isinstance(max_new_tokens, int) else list(max_new_tokens)
        stops = stop_token_ids if isinstance(stop_token_ids, Sequence) else [set(stop_token_ids or ())] * n
        stops = [set(s) | {self.eos_id} for s in stops]
        gen = generator or torch.Generator(device=self.device).manual_seed(sampling.seed)
        out: list[Sample] = []
        prev = torch.get_num_threads()
        if self.num_threads:
            torch.set_num_threads(self.num_threads)
        # schedule similar prompt lengths together (less padding, rows of one batch finish together),
        # then hand results back in the caller's order
        order = sorted(range(n), key=lambda i: len(contexts[i]))
        try:
            for lo in range(0, n, self.max_batch_size):
                idx = order[lo: lo + self.max_batch_size]
                out.extend(self._sample_batch([contexts[i] for i in idx], sampling, [budgets[i] for i in idx],
                                              [stops[i] for i in idx], tuple(stop_strings), gen))
        finally:
            torch.set_num_threads(prev)
        result: list[Sample] = [None] * n  # type: ignore[list-item]
        for pos, i in enumerate(order):
            result[i] = out[pos]
        return result

    def _sample_batch(self, contexts, sampling, budgets, stops, stop_strings, gen) -> list[Sample]:
        b = len(contexts)
        results = [Sample([], [], "length") for _ in range(b)]
        live = [i for i in range(b) if budgets[i] > 0]
        if not live:
            return results
        width = max(len(c) for c in contexts)
        ids = torch.full((b, width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((b, width), dtype=torch.long)
        for i, c in enumerate(contexts):
            if c:
                ids[i, width - len(c):] = torch.tensor(list(c), dtype=torch.long)
                mask[i, width - len(c):] = 1
        ids, mask = ids[live].to(self.device), mask[live].to(self.device)
        pos = (mask.cumsum(-1) - 1).clamp(min=0)
        fast = self.fast_path and kv_llama.supports(self.model)
        if fast:
            dec = kv_llama.KVDecoder(self.model, len(live), width + max(budgets[i] for i in live), self.device)
            logits = dec.forward(ids, pos, mask)
        else:
            from transformers import DynamicCache  # heavy, and only this fallback path needs it

            cache = DynamicCache()
            o = self.model(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=True, logits_to_keep=1,
                           **{self._cache_kw: cache})
            logits = o.logits[:, -1]
        next_pos = pos[:, -1:] + 1
        rows = list(live)  # batch row -> sample index
        active = list(range(len(rows)))  # batch rows still sampling (finished rows idle until compaction)
        tail = max((len(s) for s in stop_strings), default=0)
        while active:
            logp = _temperature_logprobs(logits, sampling.temperature)
            tok = _draw(logp, sampling, gen)
            lp = logp.gather(-1, tok[:, None]).squeeze(-1)
            toks, lps = tok.tolist(), lp.tolist()
            keep: list[int] = []
            for r in active:
                i = rows[r]
                s = results[i]
                t = toks[r]
                s.token_ids.append(t)
                s.logprobs.append(lps[r])
                if t in stops[i]:
                    s.finish_reason = "stop"
                elif tail and any(x in self.tokenizer.decode(s.token_ids[-(tail + 2):]) for x in stop_strings):
                    s.finish_reason = "stop"
                elif len(s.token_ids) >= budgets[i]:
                    s.finish_reason = "length"
                else:
                    keep.append(r)
            active = keep
            if not active:
                break
            if len(active) <= 0.75 * len(rows):  # compact: drop finished rows from the batch and the cache
                idx = torch.tensor(active, device=self.device)
                if fast:
                    dec.select(idx)
                else:
                    cache.batch_select_indices(idx)
                tok, mask, next_pos = tok[idx], mask[idx], next_pos[idx]
                rows = [rows[r] for r in active]
                active = list(range(len(rows)))
            mask = torch.cat([mask, mask.new_ones((len(rows), 1))], dim=1)
            if fast:
                logits = dec.forward(tok[:, None], next_pos, mask)
            else:
                o = self.model(input_ids=tok[:, None], attention_mask=mask, position_ids=next_pos, use_cache=True,
                               **{self._cache_kw: cache})
                logits = o.logits[:, -1]
            next_pos = next_pos + 1
        return results

    # -- the protocol ------------------------------------------------------------------------
    def generate(
        self,
        prompts: Sequence[str],
        n_samples: int = 1,
        sampling: SamplingParams | None = None,
        tools: Sequence[ToolFactory | None] | None = None,
        max_steps: int = 1,
    ) -> list[Rollout]:
        """`n_samples` rollouts per prompt, prompt-major (see `RolloutEngine`)."""
        sampling = sampling or SamplingParams()
        if tools is not None and any(t is not None for t in tools):
            return multistep_generate(self, prompts, n_samples, sampling, tools, max_steps)
        prompt_ids = [self.encode(p) for p in prompts]
        contexts = [ids for ids in prompt_ids for _ in range(n_samples)]
        samples = self.sample_ids(contexts, sampling, stop_strings=sampling.stop)
        out = []
        for k, s in enumerate(samples):
            i = k // n_samples
            out.append(Rollout(
                prompt=prompts[i], prompt_ids=list(prompt_ids[i]), token_ids=s.token_ids, logprobs=s.logprobs,
                loss_mask=[1] * len(s.token_ids), text=self.decode_response(s.token_ids),
                policy_version=self.policy_version, group_id=i, finish_reason=s.finish_reason,
                meta={"sample": k % n_samples},
            ))
        return out

    # -- text helpers ------------------------------------------------------------------------
    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def decode_response(self, token_ids: Sequence[int]) -> str:
        """The response text without the trailing EOS (tool-call markers kept)."""
        ids = list(token_ids)
        if ids and ids[-1] == self.eos_id:
            ids = ids[:-1]
        return self.tokenizer.decode(ids, skip_special_tokens=False)


@torch.no_grad()
def recompute_logprobs(model: Any, prompt_ids: Sequence[int], token_ids: Sequence[int],
                       temperature: float = 1.0) -> torch.Tensor:
    """Log-probs of `token_ids` after `prompt_ids` from one plain forward pass (the engine's definition)."""
    device = next(model.parameters()).device
    full = torch.tensor([list(prompt_ids) + list(token_ids)], device=device)
    logits = model(input_ids=full).logits[0, len(prompt_ids) - 1: -1]
    logp = _temperature_logprobs(logits, temperature)
    return logp.gather(-1, torch.tensor(list(token_ids), device=device)[:, None]).squeeze(-1)
