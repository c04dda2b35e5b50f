"""The RL loop: sample tasks, generate groups, verify, drop flat groups, GRPO update, log, checkpoint.

    result = train_rlvr(TrainConfig(steps=40), RunInputs("path/to/base_model", tasks, paths))

One readable loop (nanochat-style): `_start` builds the run's parts, `_loop` runs the steps,
`_finish` saves the policy and closes the MLflow run. The GRPO pieces it wires together live next
to it (`flywheel.train.grpo`): `step` (one step's batch, update and metrics), `loss` (advantages,
loss), `scheduler` (which tasks, dynamic sampling, the per-task cap), `pipeline` (synchronous or
one-step-off-policy generation), `horizon` (the LR horizon a time budget reaches), `dev` (best
checkpoint, early stopping); what it shares with RFT in `flywheel.train.common`: `backend` (the
update: torch or DeepSpeed), `checkpoint` (resume), `telemetry` (MLflow), `manifest` (reproducibility).
"""

from __future__ import annotations

import copy
import json
import shutil
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from flywheel.gpu import GpuSpec, resolve_device
from flywheel.paths import FlywheelPaths
from flywheel.progress import progress_bar, quiet_transformers_bars
from flywheel.rollout.checkpoint import is_checkpoint_dir, load_model
from flywheel.tasks.base import Task
from flywheel.train.common.backend import UpdateBackend, make_backend
from flywheel.train.common.checkpoint import latest_checkpoint, load_checkpoint, save_checkpoint
from flywheel.train.common.lora import apply_lora, is_lora, load_adapter_weights, lora_of, write_adapter_info
from flywheel.train.common.manifest import build_manifest
from flywheel.train.common.placement import placement_of
from flywheel.train.common.result import TrainResult
from flywheel.train.common.rollouts import GeneratorFactory, PolicyGenerator, ScoreFn, default_score_fn
from flywheel.train.common.taskset import dev_split
from flywheel.train.common.telemetry import Telemetry, gpu_metrics, plot_reward_curve
from flywheel.train.config import TrainConfig
from flywheel.train.grpo.dev import DevTracker
from flywheel.train.grpo.horizon import BudgetClock, HorizonPlanner
from flywheel.train.grpo.pipeline import RolloutPipeline
from flywheel.train.grpo.reward import reward_fn
from flywheel.train.grpo.scheduler import TaskScheduler
from flywheel.train.grpo.step import batch_metrics, make_producer, update_policy


@dataclass(frozen=True)
class RunInputs:
    """What a run trains and where it writes, beside its config (what it does).

    `pass_rates` seeds the scheduler's difficulty (the warehouse's history); `data_partitions`
    goes into the reproducibility manifest; the policy is saved to `output_dir`
    (default `paths.models / "policies" / name`), checkpoints under `paths.checkpoints / name`.
    `dev_tasks` is the dev split (None: `dev_split` of the weighted domains minus `tasks`).
    """

    base_model: str | Path | tuple[Any, Any]
    tasks: Sequence[Task]
    paths: FlywheelPaths
    name: str = "rlvr"
    output_dir: Path | None = None
    pass_rates: Mapping[str, float] | None = None
    data_partitions: Mapping[str, Any] | None = None
    dev_tasks: Sequence[Task] | None = None

    @property
    def run_dir(self) -> Path:
        return self.paths.checkpoints / self.name

    @property
    def policy_dir(self) -> Path:
        return Path(self.output_dir) if self.output_dir else self.paths.models / "policies" / self.name


def load_policy(base_model: str | Path | Any, device: str) -> tuple[torch.nn.Module, Any]:
    """(trainable float32 model, tokenizer) from an HF folder, or a `(model, tokenizer)` pair."""
    if isinstance(base_model, tuple):
        model, tok = base_model
        return model.float().to(device).train(), tok
    model, tok = load_model(base_model, device=device, dtype="float32", trainable=True)
    return model, tok


@dataclass
class _Run:
    """A run's live parts: built by `_start`, driven by `_loop`, closed by `_finish`."""

    cfg: TrainConfig
    inputs: RunInputs
    tokenizer: Any
    backend: UpdateBackend
    ref_model: torch.nn.Module | None
    scheduler: TaskScheduler
    generator: Any  # PolicyGenerator or what `generator_factory` built (same methods)
    pipeline: RolloutPipeline
    tele: Telemetry
    manifest: dict[str, Any]
    history: list[dict[str, float]]
    start_step: int
    t_start: float
    cpu_start: float
    clock: BudgetClock  # what `time_budget_s` counts: wall, or this process's CPU time
    planner: HorizonPlanner
    dev: DevTracker
    threads_before: int

    @property
    def best_dir(self) -> Path:
        return self.inputs.run_dir / "best"


def train_rlvr(
    config: TrainConfig,
    inputs: RunInputs,
    *,
    score_fn: ScoreFn | None = None,
    telemetry: Telemetry | None = None,
    resume: bool = False,
    stop_after: int | None = None,
    on_step: Callable[[int, dict[str, float]], None] | None = None,
    generator_factory: GeneratorFactory | None = None,
) -> TrainResult:
    """Train `inputs.base_model` with GRPO on `inputs.tasks`; save the policy (HF folder).

    `resume=True` continues from the newest checkpoint under `inputs.run_dir`; `stop_after`
    ends this call after that many steps (a planned interruption: the run is resumable and
    `finished` is False). `config.time_budget_s` ends training early once the run has taken
    that long; the policy is still saved (a budgeted run, `finished` True). `score_fn`
    defaults to the verifiers; `telemetry` to an MLflow run at `inputs.paths.mlflow_uri`.
    Non-finite rewards raise `VerifierInfraError`. `generator_factory(module, tokenizer, device, shared)`
    builds the training rollouts' generator (default `PolicyGenerator`: the torch engine in process; a
    Ray rollout fleet or a vLLM engine plug in here); one with a `close()` is closed with the run.
    """
    rewards = reward_fn(score_fn or default_score_fn(), config.partial_credit)  # binary unless partial_credit
    run = _start(config, inputs, rewards, telemetry, resume, generator_factory)
    end = config.steps if stop_after is None else min(config.steps, run.start_step + stop_after)
    status, reason = "FAILED", "failed"
    try:
        end, reason = _loop(run, end, on_step)
        status = "KILLED" if reason == "stop_after" else "FINISHED"
    finally:
        run.pipeline.close()
        if callable(getattr(run.generator, "close", None)):
            run.generator.close()
        if status == "FAILED":
            run.tele.finish("FAILED")
            torch.set_num_threads(run.threads_before)
    return _finish(run, end, status, reason)


def _start(cfg: TrainConfig, inputs: RunInputs, score_fn: ScoreFn, telemetry: Telemetry | None,
           resume: bool, generator_factory: GeneratorFactory | None = None) -> _Run:
    """Load the policy, build backend, scheduler, generator and pipeline; restore a checkpoint; open MLflow."""
    t_start, cpu_start, clock = time.perf_counter(), time.process_time(), BudgetClock(cfg.budget_clock)
    paths = inputs.paths.ensure()
    device = resolve_device(GpuSpec(count=1), cfg.device)
    threads_before = torch.get_num_threads()
    # 0 = auto: one thread on CPU (more spin-wait on a shared machine and make load decide the steps)
    threads = cfg.num_threads or (1 if device == "cpu" else 0)
    if threads:
        torch.set_num_threads(threads)
    torch.manual_seed(cfg.seed)
    model, tokenizer = load_policy(inputs.base_model, device)
    ref_model = copy.deepcopy(model).eval().requires_grad_(False) if cfg.kl_coef > 0 else None
    base_path = None if isinstance(inputs.base_model, tuple) else inputs.base_model
    model = apply_lora(model, lora_of(cfg), base_path)  # lora_rank 0: the model itself
    backend = make_backend(model, cfg.optim(), placement_of(cfg, device), cfg.micro_batch_size)
    scheduler = TaskScheduler(
        inputs.tasks, cfg.domain_weights, seed=cfg.seed, pass_rates=inputs.pass_rates, target=cfg.target_pass_rate,
        sharpness=cfg.difficulty_sharpness, min_weight=cfg.min_task_weight, prior=cfg.pass_rate_prior,
        momentum=cfg.pass_rate_momentum, adaptive_prior=cfg.adaptive_prior, max_samples=cfg.max_samples_per_task,
        group_size=cfg.group_size, replay_share=cfg.replay_share,
    )
    generator = (generator_factory or PolicyGenerator)(backend.module, tokenizer, device,
                                                       shared=not cfg.off_policy_pipeline)
    pipeline = RolloutPipeline(
        make_producer(cfg, scheduler, generator, score_fn),
        lambda version: generator.sync(backend.module, version),
        off_policy=cfg.off_policy_pipeline, max_staleness=cfg.max_staleness,
    )
    planner = HorizonPlanner(cfg.steps, cfg.time_budget_s, cfg.warmup_steps, cfg.dev_every)
    weighted = [d for d, w in cfg.domain_weights.items() if w > 0]
    dev_tasks = inputs.dev_tasks if inputs.dev_tasks is not None else (
        dev_split(weighted, cfg.dev_tasks_per_domain, {t.task_id for t in inputs.tasks}) if cfg.dev_every else [])
    # dev scores the trainer's own weights in this thread (the pipelined generator may be busy)
    dev = DevTracker(cfg, dev_tasks, PolicyGenerator(backend.module, tokenizer, device, shared=True), score_fn)

    start_step, history, mlflow_run_id = 0, [], None
    ckpt = latest_checkpoint(inputs.run_dir) if resume else None
    if ckpt is None:
        shutil.rmtree(inputs.run_dir / "best", ignore_errors=True)  # an earlier run's best is not this run's
    else:
        state = load_checkpoint(ckpt, backend)
        start_step, history, mlflow_run_id = state["step"], state["history"], state.get("mlflow_run_id")
        scheduler.load_state_dict(state["scheduler"])
        planner.load_state_dict(state.get("horizon", {}))
        dev.load_state_dict(state.get("dev", {}))
        if state.get("pending") is not None:
            pipeline.preload(*state["pending"])

    base_name = "in-memory" if isinstance(inputs.base_model, tuple) else str(inputs.base_model)
    by_source = {f"n_tasks.{src}": n for src, n in sorted(Counter(scheduler.source_of.values()).items())}
    manifest = build_manifest({"train": cfg.seed}, inputs.data_partitions, device, tasks=inputs.tasks,
                              extra={"backend": cfg.backend, "n_tasks": len(inputs.tasks), "base_model": base_name,
                                     **by_source, "n_dev_tasks": len(dev_tasks), "torch_threads": torch.get_num_threads()})
    tele = telemetry or Telemetry(paths.mlflow_uri, artifact_root=paths.mlflow_artifacts)
    params = {**cfg.to_params(), **{f"manifest.{k}": v for k, v in manifest.items()}}
    if cfg.backend == "deepspeed":
        params["deepspeed_config"] = json.dumps(backend.config, sort_keys=True)  # type: ignore[attr-defined]
    tele.start(inputs.name, params, run_id=mlflow_run_id, tags={"flywheel.stage": "rlvr"})
    if ckpt is None:
        tele.log_dict(manifest, "manifest.json")
    pipeline.reset_clock()
    return _Run(cfg, inputs, tokenizer, backend, ref_model, scheduler, generator, pipeline, tele, manifest,
                history, start_step, t_start, cpu_start, clock, planner, dev, threads_before)


def _loop(run: _Run, end: int, on_step: Callable[[int, dict[str, float]], None] | None) -> tuple[int, str]:
    """Steps `run.start_step ..` until `end` or an earlier stop; returns (steps done, why it stopped):
    steps | horizon (the budget's horizon) | budget | early_stop (dev patience) | exhausted (every task
    capped) | stop_after (`end` below `cfg.steps`: a planned interruption)."""
    cfg, step = run.cfg, run.start_step
    bar = progress_bar(end, "RLVR steps", initial=run.start_step)
    try:
        while step < min(end, run.planner.horizon):
            last = min(cfg.steps, run.planner.horizon) - 1  # the run's last step (a stop_after run goes on later)
            t0 = run.clock.now()
            metrics = _step(run, step, last)
            done = step + 1
            run.planner.record_step(run.clock.now() - t0)
            horizon = run.planner.maybe_update(done, run.clock.spent())
            if horizon is not None:  # the cosine decays over the steps the budget reaches (from the next update)
                run.backend.schedule.horizon = horizon
            metrics["lr/horizon"] = float(run.planner.horizon)
            metrics.update({k: float(v) for k, v in run.scheduler.source_counts().items()})
            if run.dev.due(done, min(cfg.steps, run.planner.horizon)):
                metrics.update(_dev_score(run, done))
            run.history.append(metrics)
            run.tele.log_metrics(step, {k: v for k, v in metrics.items() if k != "step"})
            bar.update(1)
            bar.set_postfix(reward=f"{metrics.get('reward/mean', float('nan')):.3f}", refresh=False)
            if on_step:
                on_step(step, metrics)
            step = done
            stop = _stop_reason(run, done, end)
            if (cfg.checkpoint_every and done % cfg.checkpoint_every == 0) or done == end or stop:
                pending = run.pipeline.pending()  # first: the prefetch also updates the scheduler's pass rates
                save_checkpoint(run.inputs.run_dir, done, run.backend, {
                    "history": run.history, "scheduler": run.scheduler.state_dict(), "mlflow_run_id": run.tele.run_id,
                    "config": cfg.to_dict(), "pending": pending, "horizon": run.planner.state_dict(),
                    "dev": run.dev.state_dict(),
                })
            if stop:
                return done, stop
    finally:
        bar.close()
    if step >= cfg.steps:
        return step, "steps"
    return step, "horizon" if step >= run.planner.horizon else "stop_after"


def _stop_reason(run: _Run, done: int, end: int) -> str | None:
    """Why the run stops after `done` steps, before `end` and the horizon; None to go on."""
    if done >= min(end, run.planner.horizon):
        return None
    if run.dev.should_stop():
        return "early_stop"
    if run.scheduler.exhausted():  # every task at its cap: nothing left to train on
        return "exhausted"
    if run.cfg.time_budget_s and run.clock.spent() > run.cfg.time_budget_s:
        return "budget"
    return None


def _dev_score(run: _Run, done: int) -> dict[str, float]:
    """Score the dev split now; save these weights as the best when they are (`<run_dir>/best`)."""
    t0, c0 = time.perf_counter(), run.clock.now()
    out = run.dev.evaluate()
    if run.dev.observe(done, out["dev/score"]):
        save_policy(run.backend.module, run.tokenizer, run.best_dir, {"step": done, "dev_score": out["dev/score"]})
    run.planner.record_eval(run.clock.now() - c0)
    out["dev/best"] = float(run.dev.best_score if run.dev.best_score is not None else out["dev/score"])
    out["time/dev_s"] = time.perf_counter() - t0
    return out


def _step(run: _Run, step: int, last_step: int) -> dict[str, float]:
    """One update: the step's batch from the pipeline, the GRPO update, and what both cost."""
    t0 = time.perf_counter()
    version = step  # updates applied so far
    batch, made_with = run.pipeline.get(step, version, last_step)
    t1 = time.perf_counter()
    upd = update_policy(run.cfg, run.backend, batch, run.ref_model, run.generator.engine.pad_id)
    t2 = time.perf_counter()
    metrics = {"step": float(step), **batch_metrics(batch), **upd}
    metrics["time/update_s"] = t2 - t1
    metrics["time/wait_rollouts_s"] = t1 - t0
    metrics["time/step_s"] = t2 - t0
    metrics["staleness"] = float(version - made_with)
    metrics.update(run.pipeline.clock.shares())
    metrics.update(gpu_metrics())
    return metrics


def _finish(run: _Run, end: int, status: str, reason: str) -> TrainResult:
    """Reward curve, the policy (the best dev checkpoint when dev is on), idle shares; close the MLflow run."""
    finished = status == "FINISHED"  # all steps, or stopped early on purpose; KILLED is a planned interruption
    policy_dir, curve = None, None
    if run.history:
        curve = plot_reward_curve(run.history, run.inputs.run_dir / "reward_curve.png",
                                  title=f"RLVR reward: {run.inputs.name}")
        run.tele.log_artifact(curve)
    best = run.dev.best_step
    if finished:
        if best is not None and best != end and is_checkpoint_dir(run.best_dir):
            if is_lora(run.backend.module):
                load_adapter_weights(run.backend.module, run.best_dir)
            else:
                best_model, _ = load_policy(run.best_dir, "cpu")
                run.backend.module.load_state_dict(best_model.state_dict())
        policy_dir = run.inputs.policy_dir
        save_policy(run.backend.module, run.tokenizer, policy_dir,
                    {"config": run.cfg.to_dict(), "manifest": run.manifest, "mlflow_run_id": run.tele.run_id,
                     "steps_done": end, "stop_reason": reason, "dev_best_step": best, "horizon": run.planner.horizon})
        run.tele.log_dict(dict(run.scheduler.pass_rates), "pass_rates.json")
    idle = run.pipeline.clock.shares()
    sources = run.scheduler.source_counts()
    final = {**{f"final/{k}": v for k, v in idle.items()}, **{f"final/{k}": float(v) for k, v in sources.items()},
             "final/lr_horizon": float(run.planner.horizon)}
    if best is not None:
        final.update({"final/dev_best_step": float(best), "final/dev_best_score": float(run.dev.best_score or 0.0)})
    run.tele.log_metrics(end, final)
    run.tele.finish(status)
    torch.set_num_threads(run.threads_before)
    counts = {t: (run.scheduler.domain_of.get(t, ""), n, run.scheduler.passes.get(t, 0))
              for t, n in run.scheduler.attempts.items()}
    dev_best = {"step": best, "score": run.dev.best_score, "scores": run.dev.scores} if run.dev.enabled else {}
    return TrainResult(
        policy_dir=policy_dir, steps_done=end, history=run.history, mlflow_run_id=run.tele.run_id,
        mlflow_run_url=run.tele.run_url(), curve_png=curve, idle_shares=idle,
        wall_s=time.perf_counter() - run.t_start, cpu_s=time.process_time() - run.cpu_start,
        checkpoint_dir=run.inputs.run_dir, manifest=run.manifest, finished=finished, model=run.backend.module,
        stop_reason=reason, horizon=run.planner.horizon, dev_best=dev_best, task_counts=counts, sources=sources,
    )


def save_policy(module: torch.nn.Module, tokenizer: Any, out: Path, info: Mapping[str, Any]) -> Path:
    """An HF folder (`save_pretrained`) plus `flywheel_train.json` saying how it was made."""
    out.mkdir(parents=True, exist_ok=True)
    quiet_transformers_bars()
    module.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    if is_lora(module):  # an adapter folder: its base and that base's fingerprint beside it
        write_adapter_info(out)
    (out / "flywheel_train.json").write_text(json.dumps(dict(info), indent=1, sort_keys=True, default=str))
    return out
