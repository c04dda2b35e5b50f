"""One RL step: produce a batch (sample tasks, generate groups, verify, dynamic sampling), update on it, measure it.

`make_producer` is what the rollout pipeline calls for each step's data; `update_policy` is
one GRPO update with gradient accumulation over micro-batches; `batch_metrics` describes the
policy's real state from every group generated, kept or dropped. `trainer.train_rlvr` runs them.
"""

from __future__ import annotations

import hashlib
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from flywheel.rollout.types import SamplingParams
from flywheel.tasks.base import Task
from flywheel.train.common.rollouts import PolicyGenerator, ScoreFn, score_groups
from flywheel.train.config import TrainConfig
from flywheel.train.grpo import loss as grpo
from flywheel.train.grpo.scheduler import BatchStats, Group, TaskScheduler


@dataclass
class Batch:
    """One step's training data and what producing it cost."""

    step: int
    groups: list[Group]
    all_groups: list[Group]
    stats: BatchStats
    gen_s: float = 0.0
    verify_s: float = 0.0
    gen_tokens: int = 0


def _seed(*parts: Any) -> int:
    """A 31-bit seed from parts (stable across runs and machines)."""
    return int.from_bytes(hashlib.sha256(":".join(map(str, parts)).encode()).digest()[:4], "big") & 0x7FFFFFFF


def make_producer(
    cfg: TrainConfig, scheduler: TaskScheduler, generator: PolicyGenerator, score_fn: ScoreFn
) -> Callable[[int], Batch]:
    """`produce(step) -> Batch`: sample tasks, generate groups, verify, dynamic sampling."""

    def produce(step: int) -> Batch:
        timing = {"gen": 0.0, "verify": 0.0, "tokens": 0, "round": 0}
        all_groups: list[Group] = []

        def rollout_fn(tasks: list[Task]) -> list[Group]:
            sampling = SamplingParams(
                temperature=cfg.temperature, top_p=cfg.top_p, max_new_tokens=cfg.max_new_tokens,
                seed=_seed(cfg.seed, "gen", step, timing["round"]),
            )
            timing["round"] += 1
            t0 = time.perf_counter()
            groups = generator.generate(tasks, cfg.group_size, sampling, cfg.max_tool_steps)
            t1 = time.perf_counter()
            score_groups(groups, tasks, score_fn)
            timing["verify"] += time.perf_counter() - t1
            timing["gen"] += t1 - t0
            timing["tokens"] += sum(sum(r.loss_mask) for g in groups for r in g)
            out = [Group(task, g) for task, g in zip(tasks, groups, strict=True)]
            all_groups.extend(out)
            return out

        kept, stats = scheduler.collect(
            cfg.prompts_per_step, step, rollout_fn, cfg.dynamic_sampling, cfg.max_refill_rounds
        )
        for g in all_groups:  # rewards must be finite before anything trains on them
            grpo.check_finite_rewards(torch.tensor(g.rewards))
        return Batch(step, kept, all_groups, stats, timing["gen"], timing["verify"], int(timing["tokens"]))

    return produce


def _pad(rows: Sequence[Sequence[float]], value: float, dtype: torch.dtype) -> torch.Tensor:
    width = max(len(r) for r in rows)
    out = torch.full((len(rows), width), value, dtype=dtype)
    for i, r in enumerate(rows):
        out[i, : len(r)] = torch.tensor(list(r), dtype=dtype)
    return out


def update_policy(
    cfg: TrainConfig, backend: Any, batch: Batch, ref_model: torch.nn.Module | None, pad_id: int
) -> dict[str, float]:
    """One GRPO update on `batch` (gradient accumulation over micro-batches); returns loss stats."""
    rollouts = [r for g in batch.groups for r in g.rollouts]
    if not rollouts:  # every group flat: no update, but the step still counts toward the LR horizon
        backend.skip()
        return {"update/skipped": 1.0, "lr": backend.lr()}  # as after an update: the next step's lr
    rewards = torch.tensor([r.verdict.reward for r in rollouts], dtype=torch.float32)
    gids = torch.tensor([gi for gi, g in enumerate(batch.groups) for _ in g.rollouts])
    adv = grpo.ADVANTAGE_ESTIMATORS[cfg.advantage](rewards, gids)
    # sequences = prompt + response; position t of the shifted targets predicts token t+1
    seqs = [list(r.prompt_ids) + list(r.token_ids) for r in rollouts]
    masks = [[0] * (len(r.prompt_ids) - 1) + list(r.loss_mask) for r in rollouts]
    olds = [[0.0] * (len(r.prompt_ids) - 1) + list(r.logprobs) for r in rollouts]
    total_tokens = float(sum(sum(m) for m in masks))
    normalizer = total_tokens if cfg.loss_agg == "token-mean" else float(len(rollouts))
    device = backend.device
    stats = grpo.LossStats(0.0, 0.0, 0.0, 0.0)
    ent_sum, loss_sum, grad_norms = 0.0, 0.0, []
    for _epoch in range(cfg.ppo_epochs):
        for lo in range(0, len(rollouts), cfg.micro_batch_size):
            hi = lo + cfg.micro_batch_size
            ids = _pad(seqs[lo:hi], pad_id, torch.long).to(device)
            attn = _pad([[1] * len(s) for s in seqs[lo:hi]], 0, torch.long).to(device)
            mask = _pad(masks[lo:hi], 0, torch.float32).to(device)
            old = _pad(olds[lo:hi], 0.0, torch.float32).to(device)
            T = ids.shape[1] - 1
            mask, old = mask[:, :T], old[:, :T]
            if mask.shape[1] < T:  # all masks shorter than the padded sequence
                mask = torch.nn.functional.pad(mask, (0, T - mask.shape[1]))
                old = torch.nn.functional.pad(old, (0, T - old.shape[1]))
            logits = backend.forward(ids, attn)[:, :-1]
            logp = grpo.token_logprobs(logits, ids[:, 1:], cfg.temperature)
            ref_logp = None
            if ref_model is not None:
                with torch.no_grad():
                    ref_logits = ref_model(input_ids=ids, attention_mask=attn, use_cache=False).logits[:, :-1]
                    ref_logp = grpo.token_logprobs(ref_logits, ids[:, 1:], cfg.temperature)
            loss, st = grpo.policy_loss(
                logp, old, adv[lo:hi].to(device), mask, cfg.clip_low, cfg.clip_high,
                ref_logprobs=ref_logp, kl_coef=cfg.kl_coef, agg=cfg.loss_agg, normalizer=normalizer,
            )
            backend.backward(loss)
            stats = stats.merge(st)
            loss_sum += float(loss.detach())
            with torch.no_grad():
                ent_sum += float(grpo.masked_sum(grpo.entropy_from_logits(logits.detach(), cfg.temperature), mask))
        grad_norms.append(backend.step())
    n_tok = max(stats.tokens, 1.0)
    out = {
        "loss": loss_sum / cfg.ppo_epochs,
        "entropy": ent_sum / n_tok,
        "clip_fraction": stats.clipped_tokens / n_tok,
        "ratio_mean": stats.ratio_sum / n_tok,
        "grad_norm": grad_norms[-1],
        "lr": backend.lr(),
        "update/tokens": total_tokens,
        "advantage/abs_mean": float(adv.abs().mean()),
    }
    if ref_model is not None:  # no reference policy (kl_coef 0): there is no KL to report
        out["kl"] = stats.kl_sum / n_tok
    return out


def batch_metrics(batch: Batch) -> dict[str, float]:
    """Reward, pass rate and length over every generated group (kept or dropped): the policy's real state."""
    m: dict[str, float] = {}
    by_dom: dict[str, list[float]] = defaultdict(list)
    passes: dict[str, list[bool]] = defaultdict(list)
    lengths = []
    for g in batch.all_groups:
        by_dom[g.task.domain].extend(g.rewards)
        passes[g.task.domain].extend(g.passes)
        lengths.extend(sum(r.loss_mask) for r in g.rollouts)
    all_r = [x for v in by_dom.values() for x in v]
    all_p = [x for v in passes.values() for x in v]
    if all_r:
        t = torch.tensor(all_r)
        m["reward/mean"], m["reward/std"] = float(t.mean()), float(t.std()) if len(all_r) > 1 else 0.0
        m["pass_rate"] = sum(all_p) / len(all_p)
    for d, rs in by_dom.items():
        t = torch.tensor(rs)
        m[f"reward_mean/{d}"] = float(t.mean())
        m[f"reward_std/{d}"] = float(t.std()) if len(rs) > 1 else 0.0
        m[f"pass_rate/{d}"] = sum(passes[d]) / len(passes[d])
    if lengths:
        m["response_length"] = sum(lengths) / len(lengths)
    finished = [r.finish_reason == "stop" for g in batch.all_groups for r in g.rollouts]
    if finished:  # ended on their own, not cut off by the token budget or the tool-step cap
        m["samples/finished_share"] = sum(finished) / len(finished)
    m["groups/generated"] = float(batch.stats.generated_groups)
    m["groups/kept"] = float(len(batch.groups))
    m["groups/dropped_share"] = batch.stats.dropped_share
    m["groups/refill_rounds"] = float(max(0, batch.stats.rounds - 1))
    m["time/generate_s"] = batch.gen_s
    m["time/verify_s"] = batch.verify_s
    m["tokens_per_s/generate"] = batch.gen_tokens / batch.gen_s if batch.gen_s > 0 else 0.0
    return m
