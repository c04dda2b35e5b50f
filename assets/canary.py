"""`canary`: phase 2 of a promotion. The challenger shadows the champion on live traffic; it is promoted only
if it is not shown to lose there."""

import dagster as dg

from flywheel.monitoring.canary import CanaryConfig
from flywheel.serving.champion import ServeConfig
from flywheel_dagster.assets.config import config_class
from flywheel_dagster.assets.partitions import base_models
from flywheel_dagster.assets.traffic import SERVE_GPU
from flywheel_dagster.resources.gpu import GpuResource, gpu_op_tags
from flywheel_dagster.resources.rollout import RolloutEngineResource
from flywheel_dagster.resources.storage import StorageResource

OWNERS = ["team:flywheel-deploy"]
LOG_PARTITION_TAG = "flywheel/log_partition"


class CanaryRunConfig(config_class(CanaryConfig, "CanaryFields", "CanaryConfig's fields, then ServeConfig's as "
                                   "serve_*.", module=__name__, nested={"serve_": (ServeConfig, ())})):
    """The canary's size and rule (`.to_lib()` -> `CanaryConfig`) and how both models sample (`serve_*`)."""


def served_records(instance: dg.DagsterInstance, day: str) -> int:
    """Requests the flywheel served on `day` (its latest `production_traffic` that wrote the day; a re-run finds
    the logs there and writes nothing), 0 when the day's logs are the user's."""
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey("production_traffic"), asset_partitions=[day]), limit=20).records
    for r in records:
        md = r.asset_materialization.metadata
        if getattr(md.get("written"), "value", md.get("written")) is True:
            return int(getattr(md.get("records"), "value", md.get("records")) or 0)
    return 0


def canary_day(context: dg.AssetExecutionContext) -> str | None:
    """The log day whose traffic the canary shadows: the run's log partition, else the newest served day."""
    day = context.run.tags.get(LOG_PARTITION_TAG)
    if day:
        return day
    records = context.instance.fetch_materializations(dg.AssetKey("production_traffic"), limit=1).records
    return records[0].partition_key if records else None


@dg.asset(
    partitions_def=base_models,
    deps=["deployed_model"],
    group_name="deployment",
    owners=OWNERS,
    kinds={"pytorch", "mlflow"},
    op_tags=gpu_op_tags(SERVE_GPU),
    pool=SERVE_GPU.pool,
    description="Phase 2 of a promotion: the `challenger` (a candidate that passed the offline gate in "
                "`deployed_model`) answers `share` of the day's production requests (at least `min_pairs`) in "
                "shadow beside the `champion`, both verified, only the champion's answers served. `champion` "
                "moves to it only if the paired live difference is not shown below -`margin`; otherwise it stays "
                "a registered version, not promoted, the canary's sentence as the reason. Days whose logs are "
                "the user's have no live traffic to shadow: the offline gate alone decides, and says so.",
)
def canary(context: dg.AssetExecutionContext, config: CanaryRunConfig, gpu: GpuResource, storage: StorageResource,
           rollout_engine: RolloutEngineResource) -> dg.MaterializeResult:
    from flywheel.monitoring.canary import eval_vs_live_markdown
    from flywheel.serving.canary import canary_turn

    day, device = canary_day(context), gpu.torch_device(SERVE_GPU)
    records = served_records(context.instance, day) if day else 0
    outcome, run = canary_turn(day or "", storage.paths(), records, config.to_lib(),
                               engine=rollout_engine.factory(device), serve=config.nested_lib("serve_"), device=device)
    if outcome is None:
        return dg.MaterializeResult(metadata={"decided": False, "reason": "no challenger: the offline gate kept "
                                              "the champion (deployed_model says why)"})
    context.log.info(outcome.reason)
    v = outcome.verdict
    return dg.MaterializeResult(metadata={
        "decided": True, "promoted": outcome.promoted, "reason": outcome.reason, "challenger": outcome.challenger,
        "champion": outcome.champion, "day": day or "", "requests": run.requests if run else 0,
        "canary": dg.MetadataValue.json(v.to_dict() if v else {"ran": False}),
        "eval_vs_live": dg.MetadataValue.json(outcome.table),
        "eval_vs_live_table": dg.MetadataValue.md(eval_vs_live_markdown(outcome.table)),
        **({"pairs": dg.MetadataValue.path(run.path)} if run else {})})


ASSETS = [canary]
