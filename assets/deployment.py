"""`deployed_model`: register the candidate with its lineage, gate it, write its vLLM serving manifest."""

import json

import dagster as dg
from pydantic import Field

from flywheel.registry.gate import GateConfig
from flywheel_dagster.assets.config import config_class
from flywheel_dagster.assets.metadata import latest_metadata, upstream_path
from flywheel_dagster.assets.partitions import base_models
from flywheel_dagster.resources.storage import StorageResource

OWNERS = ["team:flywheel-deploy"]


class DeployConfig(config_class(GateConfig, "GateFields", "GateConfig's fields.", module=__name__)):
    """The promotion gate (`.to_lib()` -> `GateConfig`) and the serving shape."""

    serving_gpus: int = Field(default=1, description="GPUs the serving manifest asks for")
    serving_gpu_kind: str = Field(default="", description="GPU kind the serving manifest names (empty: any)")
    canary: bool = Field(default=True, description="Two-phase promotion: a candidate that passes the gate becomes "
                                                   "the `challenger` and the `canary` asset promotes it if its live "
                                                   "canary holds; false: the gate alone moves `champion`")


@dg.asset(
    partitions_def=base_models,
    deps=["eval_report"],
    group_name="deployment",
    owners=OWNERS,
    kinds={"mlflow", "vllm"},
    check_specs=[dg.AssetCheckSpec(
        "champion_not_regressed", asset="deployed_model",
        description="The champion served now is not worse than the base model it replaced in any domain.")],
    description="Registers the candidate as a version of `flywheel-policy` in the MLflow registry with its "
                "lineage (base model, log partitions, training run, eval run) and moves the `champion` alias "
                "(with `canary`, the `challenger` alias, promoted by the `canary` asset) only if the paired CI "
                "of the primary metric is above the margin and every domain is non-inferior "
                "(flywheel.registry.gate). Writes serving.json/yaml (vLLM args, default + fast) "
                "next to the model. "
                "`flywheel rollback` undoes a promotion.",
)
def deployed_model(
    context: dg.AssetExecutionContext, config: DeployConfig, storage: StorageResource
) -> dg.MaterializeResult:
    from flywheel.gpu import GpuSpec
    from flywheel.registry.candidate import eval_dir
    from flywheel.registry.deploy import champion_regression, deploy_candidate
    from flywheel.tracking import model_version_url

    release, paths = context.partition_key, storage.paths()
    training = latest_metadata(context.instance, "rlvr_policy", release)
    res = deploy_candidate(
        upstream_path(context, "rlvr_policy", "policy_path", paths.home), release, eval_dir(paths, release), paths,
        training.get("log_partitions") or [], training.get("mlflow_run_id") or None, gate=config.to_lib(),
        gpu=GpuSpec(count=config.serving_gpus, kind=config.serving_gpu_kind),
        extra_lineage={"dagster_run_id": context.run_id}, challenger=config.canary,
    )
    ok, details = champion_regression(paths.mlflow_uri, tolerance=config.non_inferiority)
    context.log.info(res.decision.reason)
    ui = storage.mlflow_ui()
    return dg.MaterializeResult(
        metadata={"promoted": res.decision.promoted, "reason": res.decision.reason,
                  "candidate": res.candidate.uri, "champion": res.champion.uri, "challenger": res.challenger or "",
                  "mlflow_model_version": dg.MetadataValue.url(
                      model_version_url(ui, res.candidate.name, res.candidate.version)),
                  "mlflow_champion_version": dg.MetadataValue.url(
                      model_version_url(ui, res.champion.name, res.champion.version)),
                  "champion_model_path": dg.MetadataValue.path(res.champion.model_path),
                  "serving_manifest": dg.MetadataValue.path(res.serving_paths["yaml"]),
                  "vllm_command": dg.MetadataValue.md(f"```\n{res.serve_command()}\n```")},
        check_results=[dg.AssetCheckResult(check_name="champion_not_regressed", passed=ok,
                                           metadata={k: json.dumps(v) if isinstance(v, dict) else str(v)
                                                     for k, v in details.items()})],
    )


ASSETS = [deployed_model]
