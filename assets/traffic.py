"""`production_traffic`: the champion serves a day of requests; its answers are that day's raw logs.

This is the edge that closes the loop: deployed_model -> production_traffic -> raw_task_logs. Dagster's
asset graph must stay acyclic, so the first half of that edge is not a graph dependency: the asset reads
whatever the MLflow registry's `champion` alias (which `deployed_model` moves) points at when it runs,
records it as `served_by`, and links `deployed_model` in its metadata (`champion_from`).
"""

import dagster as dg

from flywheel.gpu import GpuSpec
from flywheel.serving.champion import ServeConfig
from flywheel.serving.production import ProductionConfig
from flywheel_dagster.assets.config import config_class
from flywheel_dagster.assets.partitions import daily_logs
from flywheel_dagster.resources.gpu import GpuResource, gpu_op_tags
from flywheel_dagster.resources.rollout import RolloutEngineResource
from flywheel_dagster.resources.storage import StorageResource

SERVE_GPU = GpuSpec(count=1)
"""The champion samples through the rollout engine: one GPU where there is one (CPU otherwise)."""
OWNERS = ["team:flywheel-deploy"]
CHAMPION_FROM = dg.MetadataValue.asset(dg.AssetKey("deployed_model"))
"""The lineage edge the graph cannot draw (it would be a cycle): the champion `deployed_model` promoted."""


class ProductionTrafficConfig(config_class(
        ProductionConfig, "ProductionFields", "ProductionConfig's fields, then ServeConfig's as serve_*.",
        module=__name__, nested={"serve_": (ServeConfig, ())})):
    """How much traffic the day serves (`.to_lib()` -> `ProductionConfig`) and how the champion samples it
    (`serve_*` -> `ServeConfig`)."""


@dg.asset(
    partitions_def=daily_logs,
    group_name="logs",
    owners=OWNERS,
    kinds={"pytorch", "mlflow", "json"},
    op_tags=gpu_op_tags(SERVE_GPU),
    pool=SERVE_GPU.pool,
    metadata={"champion_from": CHAMPION_FROM},
    description="One day of production: the MLflow registry's `champion` (promoted by `deployed_model`; before "
                "any, the clearly labelled simulated model `simulated-prod:v1`) serves the day's requests through "
                "the `rollout_engine` resource, and its verified answers are written as that day's raw JSONL logs "
                "(raw_logs/YYYY-MM-DD/). Real logs win: a day that already has logs, or logs read from the "
                "storage resource's `raw_logs_uri`, is never overwritten (the materialization says so).",
)
def production_traffic(context: dg.AssetExecutionContext, config: ProductionTrafficConfig, gpu: GpuResource,
                       storage: StorageResource, rollout_engine: RolloutEngineResource) -> dg.MaterializeResult:
    from flywheel.serving.production import serve_production_day

    day, device = context.partition_key, gpu.torch_device(SERVE_GPU)
    res = serve_production_day(day, storage.paths(), config.to_lib(), engine=rollout_engine.factory(device),
                               serve=config.nested_lib("serve_"), device=device,
                               user_logs=storage.raw_logs_for(day) if storage.raw_logs_uri else "")
    context.log.info(res.reason)
    return dg.MaterializeResult(metadata={
        "written": res.written, "records": res.records, "lines": res.lines, "served_by": res.served_by or "none",
        "reason": res.reason, "path": dg.MetadataValue.path(res.location), "champion_from": CHAMPION_FROM})


ASSETS = [production_traffic]
