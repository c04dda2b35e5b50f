"""The RFT stage as a tracked run: rejection-sampling fine-tuning inside its own MLflow run, returning the
same `TrainResult` the RL trainer does, so the asset, the lineage and the registry treat both alike.

`train_policy` chains the stages `TrainConfig.stage` names: `rft`, `rl`, or `rft_rl` (RFT's weights are
where GRPO starts).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from flywheel.paths import FlywheelPaths
from flywheel.progress import phase_progress
from flywheel.tasks.base import Task
from flywheel.train.common.manifest import build_manifest
from flywheel.train.common.result import TrainResult
from flywheel.train.common.telemetry import Telemetry
from flywheel.train.rft.config import RftConfig
from flywheel.train.rft.curves import finetune_curve
from flywheel.train.rft.run import RftResult, run_rft, sft_config


def count_metrics(result: RftResult) -> dict[str, int]:
    """The stage's candidate counts (sampled, verified, passed, kept examples, ...) as `rft/<count>`."""
    return {f"rft/{k}": int(v) for k, v in result.counts.to_dict().items() if isinstance(v, (int, float))}


def pass_rates(result: RftResult) -> dict[str, float]:
    """The share of the policy's samples the verifiers passed, overall (`pass_rate`) and per domain
    (`pass_rate/<domain>`): the stage's headline, charted first like the RL run's reward."""
    out: dict[str, float] = {}
    attempts = passes = 0
    per: dict[str, list[int]] = {}
    for domain, a, p in result.counts.task_counts.values():
        attempts, passes = attempts + a, passes + p
        per.setdefault(domain, [0, 0])
        per[domain][0] += a
        per[domain][1] += p
    if attempts:
        out["pass_rate"] = passes / attempts
        out.update({f"pass_rate/{d}": p / a for d, (a, p) in sorted(per.items()) if a})
    return out


def log_curves(tele: Telemetry, result: RftResult, config: RftConfig) -> None:
    """The run's MLflow metrics as curves: the fine-tuning per optimizer step (`rft/loss`, `rft/lr`, `rft/epoch`,
    charted first), the sampling round cumulative per candidate judged (pass share overall and per domain, kept
    share, the counts; its last point the run's totals), then the totals no curve follows (`rft/tasks`, wall)."""
    spec = sft_config(config).optim()
    schedule = spec.schedule()
    curve = result.counts.curve
    for point in [*finetune_curve(result.losses, lambda i: schedule.lr(spec.lr, i), config.batch_size,
                                  result.counts.examples), *curve]:
        tele.log_metrics(int(point["step"]), {k: v for k, v in point.items() if k != "step"})
    totals = {k: v for k, v in {**count_metrics(result), **pass_rates(result)}.items() if not curve or k not in curve[-1]}
    tele.log_metrics(int(curve[-1]["step"]) if curve else 0, {**totals, "final/wall_s": result.wall_s})


def rft_train_result(result: RftResult, run_id: str | None, run_url: str | None) -> TrainResult:
    """An RFT run in the trainer's result shape: its 'reward' is the share of candidates the verifiers passed."""
    pass_share = result.counts.passed / max(1, result.counts.verified)
    history: list[dict[str, float]] = [{"step": i + 1, "rft/loss": loss} for i, loss in enumerate(result.losses)]
    history = history or [{"step": 0}]
    history[-1]["reward/mean"] = pass_share
    return TrainResult(
        policy_dir=result.output_dir, steps_done=len(result.losses), history=history, mlflow_run_id=run_id,
        mlflow_run_url=run_url, curve_png=None, idle_shares={}, wall_s=result.wall_s,
        checkpoint_dir=result.output_dir, cpu_s=result.cpu_s, stop_reason="steps", sources=count_metrics(result),
        task_counts=dict(result.counts.task_counts))


def run_rft_stage(
    config: RftConfig, base_model: str | Path, tasks: Sequence[Task], out_dir: Path, paths: FlywheelPaths, *,
    run_name: str, telemetry: Telemetry | None = None, data_partitions: Mapping[str, Any] | None = None,
    score_fn: Any = None, sample_engine: Any = None, restart_from: str | Path | None = None,
) -> TrainResult:
    """Run RFT from `base_model` on `tasks` into `out_dir`, logged as MLflow run `run_name`; `score_fn`
    verifies its candidates (a Ray verifier fleet; default the in-process verifiers), `sample_engine`
    (`model_path -> engine`) samples them (default the torch engine); `restart_from`: see `run_rft`."""
    tele = telemetry or Telemetry(paths.mlflow_uri, artifact_root=paths.mlflow_artifacts)
    manifest = build_manifest({"rft": config.seed}, dict(data_partitions or {}), config.device,
                              extra={"stage": "rft", "base_model": str(base_model), "n_tasks": len(tasks)},
                              tasks=tasks)
    params = {**{f"rft.{k}": v for k, v in config.to_dict().items()},
              **{f"manifest.{k}": v for k, v in manifest.items()}}
    run_id = tele.start(run_name, params, tags={"flywheel.stage": "rft"})
    try:
        result = run_rft(config, base_model, tasks, out_dir, warehouse=paths.warehouse,
                         progress=phase_progress("RFT candidates"), score_fn=score_fn,
                         sample_engine=sample_engine, restart_from=restart_from)
    except BaseException:
        tele.finish("FAILED")
        raise
    log_curves(tele, result, config)
    tele.log_dict(result.to_dict(), "rft_result.json")
    tele.finish()
    return rft_train_result(result, run_id, tele.run_url())
