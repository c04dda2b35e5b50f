"""`eval_report`: the candidate policy and the current champion on the same held-out tasks."""

import dagster as dg
from pydantic import Field

from flywheel.evaluation.runner import REGRESSION_TOLERANCE
from flywheel.evaluation.suites import EvalConfig
from flywheel.gpu import GpuSpec
from flywheel.train.config import TrainConfig
from flywheel_dagster.assets.config import config_class
from flywheel_dagster.assets.metadata import upstream_path, upstream_value
from flywheel_dagster.assets.partitions import base_models
from flywheel_dagster.resources.gpu import GpuResource, gpu_op_tags
from flywheel_dagster.resources.rollout import RolloutEngineResource
from flywheel_dagster.resources.storage import StorageResource

EVAL_GPU = GpuSpec(count=1)
"""Evaluation samples with the rollout engine: one GPU where there is one (CPU otherwise)."""
OWNERS = ["team:flywheel-eval"]


class EvalReportConfig(config_class(EvalConfig, "EvalFields", "EvalConfig's fields, tasks per domain spread.",
                                   spread={"tasks_per_domain": "tasks_"}, module=__name__)):
    """What the evaluation runs (`.to_lib()` -> `EvalConfig`, whose defaults a turn uses; `tasks_<domain>`
    fields are its `tasks_per_domain`); logged as MLflow params."""

    regression_tolerance: float = Field(default=REGRESSION_TOLERANCE, description="largest pass@1 drop vs the champion, per "
                                                                  "domain, before the asset check warns")


@dg.asset(
    partitions_def=base_models,
    deps=["rlvr_policy"],
    group_name="evaluation",
    owners=OWNERS,
    kinds={"pytorch", "mlflow"},
    op_tags=gpu_op_tags(EVAL_GPU),
    pool=EVAL_GPU.pool,
    check_specs=[
        dg.AssetCheckSpec("eval_set_decontaminated", asset="eval_report", blocking=True,
                          description="No eval prompt (held-out, production or test suite) occurs in what "
                                      "training could have shown: the mined pool, the replay window, the base "
                                      "model's SFT data."),
        dg.AssetCheckSpec("no_domain_regression_vs_champion", asset="eval_report",
                          description="No domain's pass@1 dropped vs the champion beyond tolerance (warning; "
                                      "the promotion gate acts on it)."),
    ],
    description="Held-out evaluation (math, code, multi-step agent tasks; scored by the verifiers in the "
                "sandbox) of the candidate policy and of the current champion, re-evaluated in the same run, on "
                "the same tasks with the same fresh seed (derived from the base model and the candidate's log "
                "partitions): pass@1 at the serving temperature, greedy pass@1, pass@k, steps, tokens, latency, "
                "cost per task with bootstrap CIs, the paired differences, and failure types before/after. "
                "With no champion yet, the base model is the champion (the 'before' numbers).",
)
def eval_report(
    context: dg.AssetExecutionContext, config: EvalReportConfig, gpu: GpuResource, storage: StorageResource,
    rollout_engine: RolloutEngineResource,
) -> dg.MaterializeResult:
    # torch and the verifiers load with the step, not with the code location
    from flywheel.registry.candidate import evaluate_candidate, training_prompts
    from flywheel.tracking import mlflow_run_url

    release, paths = context.partition_key, storage.paths()
    prompts = training_prompts(paths.warehouse, base_model=release,
                               replay_per_domain=TrainConfig().replay_tasks_per_domain)
    ev = evaluate_candidate(
        upstream_path(context, "rlvr_policy", "policy_path", paths.home), release,
        upstream_path(context, "base_model", "path", paths.home),
        config.to_lib(), paths, train_prompts=prompts or [], tolerance=config.regression_tolerance,
        log_partitions=upstream_value(context, "rlvr_policy", "log_partitions"),
        device=gpu.torch_device(EVAL_GPU), mlflow_tags={"dagster.run_id": context.run_id},
        engine=rollout_engine.factory(gpu.torch_device(EVAL_GPU)),
    )
    storage.link_dagster_run(ev.eval_run_id, context.run_id)
    c = ev.candidate.contamination
    link = {"mlflow_run": dg.MetadataValue.url(mlflow_run_url(paths.mlflow_uri, ev.eval_run_id, storage.mlflow_ui()))
            } if ev.eval_run_id else {}
    return dg.MaterializeResult(
        metadata={"report": dg.MetadataValue.md(ev.markdown), **ev.flat_metrics(), **link},
        check_results=[
            dg.AssetCheckResult(check_name="eval_set_decontaminated", passed=bool(prompts) and c.clean,
                                severity=dg.AssetCheckSeverity.ERROR,
                                metadata={**c.to_dict(), "pool_found": prompts is not None}),
            dg.AssetCheckResult(check_name="no_domain_regression_vs_champion",
                                passed=not ev.comparison.regressions, severity=dg.AssetCheckSeverity.WARN,
                                metadata={"regressions": ", ".join(ev.comparison.regressions) or "none",
                                          "tolerance": config.regression_tolerance}),
        ],
    )


ASSETS = [eval_report]
