"""The RL loop: sample tasks, generate groups, verify, drop flat groups, GRPO update, log, checkpoint.

    result = train_rlvr(GRPOConfig(steps=40), "path/to/base_model", tasks)

One readable loop (nanochat-style). The pieces it wires together live next to it:
`grpo` (advantages, loss), `torch_backend` / `deepspeed_backend` (the update),
`flywheel.rollout.scheduler` (which tasks, dynamic sampling), `pipeline` (synchronous or
one-step-off-policy generation), `checkpoint` (resume), `telemetry` (MLflow), `manifest`.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from flywheel.gpu import GpuSpec, resolve_device
from flywheel.paths import FlywheelPaths
from flywheel.progress import progress_bar, quiet_transformers_bars
from flywheel.rollout.scheduler import BatchStats, Group, TaskScheduler
from flywheel.rollout.types import SamplingParams
from flywheel.tasks.base import Task
from flywheel.train import grpo
from flywheel.train.checkpoint import latest_checkpoint, load_checkpoint, save_checkpoint
from flywheel.train.config import GRPOConfig
from flywheel.train.manifest import build_manifest
from flywheel.train.pipeline import RolloutPipeline
from flywheel.train.rollouts import PolicyGenerator, ScoreFn, default_score_fn, score_groups
from flywheel.train.telemetry import Telemetry, gpu_metrics, plot_reward_curve
from flywheel.train.torch_backend import make_backend


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


@dataclass
class TrainResult:
    """What a training run produced; `policy_dir` is an HF folder (`from_pretrained`-loadable)."""

    policy_dir: Path | None
    steps_done: int
    history: list[dict[str, float]]
    mlflow_run_id: str | None
    mlflow_run_url: str | None
    curve_png: Path | None
    idle_shares: dict[str, float]
    wall_s: float
    checkpoint_dir: Path
    cpu_s: float = 0.0
    manifest: dict[str, Any] = field(default_factory=dict)
    finished: bool = True
    model: Any = None

    @property
    def final_reward(self) -> float:
        """Mean reward of the last few steps (a single step is noisy)."""
        tail = [h["reward/mean"] for h in self.history[-3:] if "reward/mean" in h]
        return sum(tail) / len(tail) if tail else float("nan")

    def to_dict(self) -> dict[str, Any]:
        return {
            "policy_dir": str(self.policy_dir) if self.policy_dir else None,
            "steps_done": self.steps_done,
            "final_reward": self.final_reward,
            "mlflow_run_id": self.mlflow_run_id,
            "mlflow_run_url": self.mlflow_run_url,
            "curve_png": str(self.curve_png) if self.curve_png else None,
            "idle_shares": self.idle_shares,
            "wall_s": self.wall_s,
            "cpu_s": self.cpu_s,
            "finished": self.finished,
            "reward_curve": [h.get("reward/mean") for h in self.history],
        }


def load_policy(base_model: str | Path | Any, device: str) -> tuple[torch.nn.Module, Any]:
    """(trainable float32 model, tokenizer) from an HF folder, or a `(model, tokenizer)` pair."""
    if isinstance(base_model, tuple):
        model, tok = base_model
        return model.float().to(device).train(), tok
    from flywheel.rollout.checkpoint import load_model

    model, tok = load_model(base_model, device=device, dtype="float32", trainable=True)
    return model, tok


def _seed(*parts: Any) -> int:
    """A 31-bit seed from parts (stable across runs and machines)."""
    import hashlib

    return int.from_bytes(hashlib.sha256(":".join(map(str, parts)).encode()).digest()[:4], "big") & 0x7FFFFFFF


def make_producer(
    cfg: GRPOConfig, scheduler: TaskScheduler, generator: PolicyGenerator, score_fn: ScoreFn
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
    cfg: GRPOConfig, backend: Any, batch: Batch, ref_model: torch.nn.Module | None, pad_id: int
) -> dict[str, float]:
    """One GRPO update on `batch` (gradient accumulation over micro-batches); returns loss stats."""
    rollouts = [r for g in batch.groups for r in g.rollouts]
    if not rollouts:
        return {"update/skipped": 1.0}
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
    return {
        "loss": loss_sum / cfg.ppo_epochs,
        "entropy": ent_sum / n_tok,
        "kl": stats.kl_sum / n_tok,
        "clip_fraction": stats.clipped_tokens / n_tok,
        "ratio_mean": stats.ratio_sum / n_tok,
        "grad_norm": grad_norms[-1],
        "lr": backend.lr(),
        "update/tokens": total_tokens,
        "advantage/abs_mean": float(adv.abs().mean()),
    }


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
    m["groups/generated"] = float(batch.stats.generated_groups)
    m["groups/kept"] = float(len(batch.groups))
    m["groups/dropped_share"] = batch.stats.dropped_share
    m["groups/refill_rounds"] = float(max(0, batch.stats.rounds - 1))
    m["time/generate_s"] = batch.gen_s
    m["time/verify_s"] = batch.verify_s
    m["tokens_per_s/generate"] = batch.gen_tokens / batch.gen_s if batch.gen_s > 0 else 0.0
    return m


def train_rlvr(
    config: GRPOConfig,
    base_model: str | Path | tuple[Any, Any],
    tasks: Sequence[Task],
    *,
    paths: FlywheelPaths | None = None,
    run_name: str = "rlvr",
    output_dir: Path | None = None,
    score_fn: ScoreFn | None = None,
    resume: bool = False,
    pass_rates: Mapping[str, float] | None = None,
    telemetry: Telemetry | None = None,
    data_partitions: Mapping[str, Any] | None = None,
    stop_after: int | None = None,
    time_budget_s: float | None = None,
    budget_clock: str = "wall",
    on_step: Callable[[int, dict[str, float]], None] | None = None,
) -> TrainResult:
    """Train `base_model` with GRPO on `tasks`; save the policy (HF folder) to `output_dir`.

    `pass_rates` seeds the scheduler's difficulty (the warehouse's history); `resume=True`
    continues from the newest checkpoint under `paths.checkpoints / run_name`; `stop_after`
    ends this call after that many steps (a planned interruption: the run is resumable and
    `finished` is False). `time_budget_s` ends training early once the wall time since the
    call began exceeds it; the policy is still saved (a budgeted run, `finished` True).
    `budget_clock="cpu"` counts this process's CPU time instead (what the run would take on
    dedicated cores when the machine is shared).
    Non-finite rewards raise `VerifierInfraError`.
    """
    t_start = time.perf_counter()
    cpu_start = time.process_time()
    cfg = config
    paths = (paths or FlywheelPaths.from_env()).ensure()
    if cfg.num_threads:
        torch.set_num_threads(cfg.num_threads)
    device = resolve_device(GpuSpec(count=1), cfg.device)
    torch.manual_seed(cfg.seed)
    score_fn = score_fn or default_score_fn()
    run_dir = paths.checkpoints / run_name

    model, tokenizer = load_policy(base_model, device)
    ref_model = None
    if cfg.kl_coef > 0:
        import copy

        ref_model = copy.deepcopy(model).eval().requires_grad_(False)
    backend = make_backend(model, cfg, device)
    scheduler = TaskScheduler(
        tasks, cfg.domain_weights, seed=cfg.seed, pass_rates=pass_rates, target=cfg.target_pass_rate,
        sharpness=cfg.difficulty_sharpness, min_weight=cfg.min_task_weight, prior=cfg.pass_rate_prior,
        momentum=cfg.pass_rate_momentum, adaptive_prior=cfg.adaptive_prior,
    )
    generator = PolicyGenerator(backend.module, tokenizer, device, shared=not cfg.off_policy_pipeline)
    pipeline = RolloutPipeline(
        make_producer(cfg, scheduler, generator, score_fn),
        lambda version: generator.sync(backend.module, version),
        off_policy=cfg.off_policy_pipeline, max_staleness=cfg.max_staleness,
    )

    start_step, history, mlflow_run_id = 0, [], None
    ckpt = latest_checkpoint(run_dir) if resume else None
    if ckpt is not None:
        state = load_checkpoint(ckpt, backend)
        start_step, history, mlflow_run_id = state["step"], state["history"], state.get("mlflow_run_id")
        scheduler.load_state_dict(state["scheduler"])
        if state.get("pending") is not None:
            pipeline.preload(*state["pending"])

    manifest = build_manifest(
        {"train": cfg.seed}, data_partitions, device,
        extra={"backend": cfg.backend, "n_tasks": len(tasks), "base_model": str(base_model if not isinstance(base_model, tuple) else "in-memory")},
    )
    tele = telemetry or Telemetry(paths.mlflow_uri, artifact_root=paths.mlflow_artifacts)
    params = {**cfg.to_params(), **{f"manifest.{k}": v for k, v in manifest.items()}}
    if cfg.backend == "deepspeed":
        params["deepspeed_config"] = json.dumps(backend.config, sort_keys=True)
    tele.start(run_name, params, run_id=mlflow_run_id, tags={"flywheel.stage": "rlvr"})
    if ckpt is None:
        tele.log_dict(manifest, "manifest.json")

    last = cfg.steps - 1
    end = cfg.steps if stop_after is None else min(cfg.steps, start_step + stop_after)
    status = "FAILED"
    budget_hit = False
    pipeline.reset_clock()
    bar = progress_bar(end, "RLVR steps", initial=start_step)
    try:
        for step in range(start_step, end):
            t0 = time.perf_counter()
            version = step  # updates applied so far
            batch, made_with = pipeline.get(step, version, last)
            t1 = time.perf_counter()
            upd = update_policy(cfg, backend, batch, ref_model, generator.engine.pad_id)
            t2 = time.perf_counter()
            metrics = {"step": float(step), **batch_metrics(batch), **upd}
            metrics["time/update_s"] = t2 - t1
            metrics["time/wait_rollouts_s"] = t1 - t0
            metrics["time/step_s"] = t2 - t0
            metrics["staleness"] = float(version - made_with)
            metrics.update(pipeline.clock.shares())
            metrics.update(gpu_metrics())
            history.append(metrics)
            tele.log_metrics(step, {k: v for k, v in metrics.items() if k != "step"})
            bar.update(1)
            bar.set_postfix(reward=f"{metrics.get('reward/mean', float('nan')):.3f}", refresh=False)
            if on_step:
                on_step(step, metrics)
            done = step + 1
            if (cfg.checkpoint_every and done % cfg.checkpoint_every == 0) or done == end:
                pending = pipeline.pending()  # first: the prefetch also updates the scheduler's pass rates
                save_checkpoint(run_dir, done, backend, {
                    "history": history, "scheduler": scheduler.state_dict(), "mlflow_run_id": tele.run_id,
                    "config": cfg.to_dict(), "pending": pending,
                })
            spent = time.process_time() - cpu_start if budget_clock == "cpu" else time.perf_counter() - t_start
            if time_budget_s is not None and spent > time_budget_s and done < end:
                budget_hit, end = True, done
                break
        status = "FINISHED" if end == cfg.steps or budget_hit else "KILLED"
    finally:
        bar.close()
        pipeline.close()
        if status == "FAILED":
            tele.finish("FAILED")

    finished = end == cfg.steps or budget_hit
    policy_dir, curve = None, None
    if history:
        curve = plot_reward_curve(history, run_dir / "reward_curve.png", title=f"RLVR reward: {run_name}")
        tele.log_artifact(curve)
    if finished:
        policy_dir = Path(output_dir) if output_dir else paths.models / "policies" / run_name
        save_policy(backend.module, tokenizer, policy_dir, {"config": cfg.to_dict(), "manifest": manifest,
                                                              "mlflow_run_id": tele.run_id})
        tele.log_dict({k: v for k, v in scheduler.pass_rates.items()}, "pass_rates.json")
    idle = pipeline.clock.shares()
    tele.log_metrics(end, {f"final/{k}": v for k, v in idle.items()})
    tele.finish(status)
    return TrainResult(
        policy_dir=policy_dir, steps_done=end, history=history, mlflow_run_id=tele.run_id,
        mlflow_run_url=tele.run_url(), curve_png=curve, idle_shares=idle,
        wall_s=time.perf_counter() - t_start, cpu_s=time.process_time() - cpu_start, checkpoint_dir=run_dir, manifest=manifest, finished=finished,
        model=backend.module,
    )


def save_policy(module: torch.nn.Module, tokenizer: Any, out: Path, info: Mapping[str, Any]) -> Path:
    """An HF folder (`save_pretrained`) plus `flywheel_train.json` saying how it was made."""
    out.mkdir(parents=True, exist_ok=True)
    quiet_transformers_bars()
    module.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    (out / "flywheel_train.json").write_text(json.dumps(dict(info), indent=1, sort_keys=True, default=str))
    return out
