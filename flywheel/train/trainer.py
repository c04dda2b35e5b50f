"""The RL loop: sample tasks, generate groups, verify, drop flat groups, GRPO update, log, checkpoint.

    result = train_rlvr(GRPOConfig(steps=40), RunInputs("path/to/base_model", tasks, paths))

One readable loop (nanochat-style): `_start` builds the run's parts, `_loop` runs the steps,
`_finish` saves the policy and closes the MLflow run. The pieces it wires together live next
to it: `step` (one step's batch, update and metrics), `grpo` (advantages, loss), `backend`
(the update: torch or DeepSpeed), `scheduler` (which tasks, dynamic sampling), `pipeline`
(synchronous or one-step-off-policy generation), `checkpoint` (resume), `telemetry`
(MLflow), `manifest` (reproducibility).
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from flywheel.gpu import GpuSpec, resolve_device
from flywheel.paths import FlywheelPaths
from flywheel.progress import progress_bar, quiet_transformers_bars
from flywheel.rollout.checkpoint import load_model
from flywheel.tasks.base import Task
from flywheel.train.backend import UpdateBackend, make_backend
from flywheel.train.checkpoint import latest_checkpoint, load_checkpoint, save_checkpoint
from flywheel.train.config import GRPOConfig
from flywheel.train.manifest import build_manifest
from flywheel.train.pipeline import RolloutPipeline
from flywheel.train.rollouts import PolicyGenerator, ScoreFn, default_score_fn
from flywheel.train.scheduler import TaskScheduler
from flywheel.train.step import batch_metrics, make_producer, update_policy
from flywheel.train.telemetry import Telemetry, gpu_metrics, plot_reward_curve


@dataclass(frozen=True)
class RunInputs:
    """What a run trains and where it writes, beside its config (what it does).

    `pass_rates` seeds the scheduler's difficulty (the warehouse's history); `data_partitions`
    goes into the reproducibility manifest; the policy is saved to `output_dir`
    (default `paths.models / "policies" / name`), checkpoints under `paths.checkpoints / name`.
    """

    base_model: str | Path | tuple[Any, Any]
    tasks: Sequence[Task]
    paths: FlywheelPaths
    name: str = "rlvr"
    output_dir: Path | None = None
    pass_rates: Mapping[str, float] | None = None
    data_partitions: Mapping[str, Any] | None = None

    @property
    def run_dir(self) -> Path:
        return self.paths.checkpoints / self.name

    @property
    def policy_dir(self) -> Path:
        return Path(self.output_dir) if self.output_dir else self.paths.models / "policies" / self.name


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
    model, tok = load_model(base_model, device=device, dtype="float32", trainable=True)
    return model, tok


@dataclass
class _Run:
    """A run's live parts: built by `_start`, driven by `_loop`, closed by `_finish`."""

    cfg: GRPOConfig
    inputs: RunInputs
    tokenizer: Any
    backend: UpdateBackend
    ref_model: torch.nn.Module | None
    scheduler: TaskScheduler
    generator: PolicyGenerator
    pipeline: RolloutPipeline
    tele: Telemetry
    manifest: dict[str, Any]
    history: list[dict[str, float]]
    start_step: int
    t_start: float
    cpu_start: float

    def spent_s(self) -> float:
        """Time against `time_budget_s`: wall clock, or this process's CPU time (`budget_clock="cpu"`)."""
        if self.cfg.budget_clock == "cpu":
            return time.process_time() - self.cpu_start
        return time.perf_counter() - self.t_start


def train_rlvr(
    config: GRPOConfig,
    inputs: RunInputs,
    *,
    score_fn: ScoreFn | None = None,
    telemetry: Telemetry | None = None,
    resume: bool = False,
    stop_after: int | None = None,
    on_step: Callable[[int, dict[str, float]], None] | None = None,
) -> TrainResult:
    """Train `inputs.base_model` with GRPO on `inputs.tasks`; save the policy (HF folder).

    `resume=True` continues from the newest checkpoint under `inputs.run_dir`; `stop_after`
    ends this call after that many steps (a planned interruption: the run is resumable and
    `finished` is False). `config.time_budget_s` ends training early once the run has taken
    that long; the policy is still saved (a budgeted run, `finished` True). `score_fn`
    defaults to the verifiers; `telemetry` to an MLflow run at `inputs.paths.mlflow_uri`.
    Non-finite rewards raise `VerifierInfraError`.
    """
    run = _start(config, inputs, score_fn or default_score_fn(), telemetry, resume)
    end = config.steps if stop_after is None else min(config.steps, run.start_step + stop_after)
    status = "FAILED"
    try:
        end, budget_hit = _loop(run, end, on_step)
        status = "FINISHED" if end == config.steps or budget_hit else "KILLED"
    finally:
        run.pipeline.close()
        if status == "FAILED":
            run.tele.finish("FAILED")
    return _finish(run, end, status)


def _start(cfg: GRPOConfig, inputs: RunInputs, score_fn: ScoreFn, telemetry: Telemetry | None,
           resume: bool) -> _Run:
    """Load the policy, build backend, scheduler, generator and pipeline; restore a checkpoint; open MLflow."""
    t_start, cpu_start = time.perf_counter(), time.process_time()
    paths = inputs.paths.ensure()
    if cfg.num_threads:
        torch.set_num_threads(cfg.num_threads)
    device = resolve_device(GpuSpec(count=1), cfg.device)
    torch.manual_seed(cfg.seed)
    model, tokenizer = load_policy(inputs.base_model, device)
    ref_model = copy.deepcopy(model).eval().requires_grad_(False) if cfg.kl_coef > 0 else None
    backend = make_backend(model, cfg, device)
    scheduler = TaskScheduler(
        inputs.tasks, cfg.domain_weights, seed=cfg.seed, pass_rates=inputs.pass_rates, target=cfg.target_pass_rate,
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
    ckpt = latest_checkpoint(inputs.run_dir) if resume else None
    if ckpt is not None:
        state = load_checkpoint(ckpt, backend)
        start_step, history, mlflow_run_id = state["step"], state["history"], state.get("mlflow_run_id")
        scheduler.load_state_dict(state["scheduler"])
        if state.get("pending") is not None:
            pipeline.preload(*state["pending"])

    base_name = "in-memory" if isinstance(inputs.base_model, tuple) else str(inputs.base_model)
    manifest = build_manifest({"train": cfg.seed}, inputs.data_partitions, device,
                              extra={"backend": cfg.backend, "n_tasks": len(inputs.tasks), "base_model": base_name})
    tele = telemetry or Telemetry(paths.mlflow_uri, artifact_root=paths.mlflow_artifacts)
    params = {**cfg.to_params(), **{f"manifest.{k}": v for k, v in manifest.items()}}
    if cfg.backend == "deepspeed":
        params["deepspeed_config"] = json.dumps(backend.config, sort_keys=True)  # type: ignore[attr-defined]
    tele.start(inputs.name, params, run_id=mlflow_run_id, tags={"flywheel.stage": "rlvr"})
    if ckpt is None:
        tele.log_dict(manifest, "manifest.json")
    pipeline.reset_clock()
    return _Run(cfg, inputs, tokenizer, backend, ref_model, scheduler, generator, pipeline, tele, manifest,
                history, start_step, t_start, cpu_start)


def _loop(run: _Run, end: int, on_step: Callable[[int, dict[str, float]], None] | None) -> tuple[int, bool]:
    """Steps `run.start_step .. end - 1`; returns (steps done, whether the time budget ended the run)."""
    cfg = run.cfg
    bar = progress_bar(end, "RLVR steps", initial=run.start_step)
    try:
        for step in range(run.start_step, end):
            metrics = _step(run, step)
            run.history.append(metrics)
            run.tele.log_metrics(step, {k: v for k, v in metrics.items() if k != "step"})
            bar.update(1)
            bar.set_postfix(reward=f"{metrics.get('reward/mean', float('nan')):.3f}", refresh=False)
            if on_step:
                on_step(step, metrics)
            done = step + 1
            if (cfg.checkpoint_every and done % cfg.checkpoint_every == 0) or done == end:
                pending = run.pipeline.pending()  # first: the prefetch also updates the scheduler's pass rates
                save_checkpoint(run.inputs.run_dir, done, run.backend, {
                    "history": run.history, "scheduler": run.scheduler.state_dict(), "mlflow_run_id": run.tele.run_id,
                    "config": cfg.to_dict(), "pending": pending,
                })
            if cfg.time_budget_s and run.spent_s() > cfg.time_budget_s and done < end:
                return done, True
    finally:
        bar.close()
    return end, False


def _step(run: _Run, step: int) -> dict[str, float]:
    """One update: the step's batch from the pipeline, the GRPO update, and what both cost."""
    t0 = time.perf_counter()
    version = step  # updates applied so far
    batch, made_with = run.pipeline.get(step, version, run.cfg.steps - 1)
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


def _finish(run: _Run, end: int, status: str) -> TrainResult:
    """Reward curve, the policy (when the run finished), final idle shares; close the MLflow run."""
    finished = status == "FINISHED"  # all steps, or the time budget spent; KILLED is a planned stop
    policy_dir, curve = None, None
    if run.history:
        curve = plot_reward_curve(run.history, run.inputs.run_dir / "reward_curve.png",
                                  title=f"RLVR reward: {run.inputs.name}")
        run.tele.log_artifact(curve)
    if finished:
        policy_dir = run.inputs.policy_dir
        save_policy(run.backend.module, run.tokenizer, policy_dir,
                    {"config": run.cfg.to_dict(), "manifest": run.manifest, "mlflow_run_id": run.tele.run_id})
        run.tele.log_dict(dict(run.scheduler.pass_rates), "pass_rates.json")
    idle = run.pipeline.clock.shares()
    run.tele.log_metrics(end, {f"final/{k}": v for k, v in idle.items()})
    run.tele.finish(status)
    return TrainResult(
        policy_dir=policy_dir, steps_done=end, history=run.history, mlflow_run_id=run.tele.run_id,
        mlflow_run_url=run.tele.run_url(), curve_png=curve, idle_shares=idle,
        wall_s=time.perf_counter() - run.t_start, cpu_s=time.process_time() - run.cpu_start,
        checkpoint_dir=run.inputs.run_dir, manifest=run.manifest, finished=finished, model=run.backend.module,
    )


def save_policy(module: torch.nn.Module, tokenizer: Any, out: Path, info: Mapping[str, Any]) -> Path:
    """An HF folder (`save_pretrained`) plus `flywheel_train.json` saying how it was made."""
    out.mkdir(parents=True, exist_ok=True)
    quiet_transformers_bars()
    module.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    (out / "flywheel_train.json").write_text(json.dumps(dict(info), indent=1, sort_keys=True, default=str))
    return out
