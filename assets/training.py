"""`rlvr_policy`: training on the mined task pool (with replay from the train suites) and the validated verifiers,
per base model: RFT by default, GRPO with stage rl; the run's per-task attempts go back into difficulty_history."""


from collections.abc import Mapping
from typing import Any

import dagster as dg
from pydantic import Field

from flywheel.gpu import GpuSpec
from flywheel.train.config import TrainConfig
from flywheel.train.rft.config import RFT_PREFIX, RFT_RUN_FIELDS, RftConfig
from flywheel_dagster.assets.config import config_class
from flywheel_dagster.assets.metadata import latest_metadata, policy_metadata, upstream_path
from flywheel_dagster.assets.partitions import base_models
from flywheel_dagster.resources.gpu import GpuResource, gpu_op_tags
from flywheel_dagster.resources.ray import RayResource
from flywheel_dagster.resources.rollout import RolloutEngineResource
from flywheel_dagster.resources.storage import StorageResource
from flywheel_dagster.resources.trainer import TrainerResource

TRAIN_GPU = GpuSpec(count=1)
"""The update and the rollouts share one GPU where there is one (CPU otherwise); one training run per pool."""


PLACEMENT = ("backend", "zero_stage", "device", "num_threads")
"""`TrainConfig` fields the resources decide (`TrainerResource`, `GpuResource`): where the run happens."""


class RlvrConfig(config_class(TrainConfig, "RlvrFields", "TrainConfig's fields but placement, and RftConfig's.",
                              exclude=PLACEMENT, module=__name__,
                              nested={RFT_PREFIX: (RftConfig, RFT_RUN_FIELDS)})):
    """What the training run does (`.to_lib()` -> `TrainConfig`, whose defaults are the measured tiny-model
    recipe); where it runs is `TrainerResource` and `GpuResource`."""

    backend: str = Field(default="", description="Update backend of this run: torch | deepspeed "
                                                 "(empty: the TrainerResource's).")

    def to_lib(self, placement: Mapping[str, Any] | None = None) -> TrainConfig:
        place = dict(placement or {})
        if self.backend:
            place["backend"] = self.backend
        return super().to_lib(**place)


@dg.asset(
    partitions_def=base_models, deps=["base_model", "task_pool", "verifiers"], group_name="training",
    kinds={"pytorch", "mlflow"}, pool=TRAIN_GPU.pool, op_tags=gpu_op_tags(TRAIN_GPU),
    check_specs=[dg.AssetCheckSpec("rlvr_run_sound", asset="rlvr_policy", blocking=True,
                                   description="The run finished all steps with finite rewards and saved a policy.")],
    description="Training with verifiable rewards on the task pool mixed with train-suite replay, the validated "
                "verifiers as the reward: `stage` rft (fine-tune on the policy's verified samples; the default), rl "
                "(GRPO: group-normalized advantages, clipped ratio, dynamic sampling, best dev-split checkpoint) or "
                "rft_rl. Policy at models/policies/<partition>; GRPO's attempts go back to difficulty_history.",
)
def rlvr_policy(context: dg.AssetExecutionContext, config: RlvrConfig, gpu: GpuResource, trainer: TrainerResource,
                storage: StorageResource, rollout_engine: RolloutEngineResource,
                ray: RayResource) -> dg.MaterializeResult:
    from flywheel.registry.mlflow_registry import training_start
    from flywheel.train.api import train_policy

    rollout_engine.check_trainable()
    release = context.partition_key
    cfg = config.to_lib(trainer.placement(gpu.torch_device(TRAIN_GPU)))
    log_partitions = list(latest_metadata(context.instance, "task_pool").get("log_partitions") or [])
    paths = storage.paths()
    base_path = upstream_path(context, "base_model", "path", paths.home)
    start, start_label = training_start(paths.mlflow_uri, release, base_path, cfg.init_from)
    restart = base_path if cfg.init_from == "rebase" and start != base_path else None
    if restart is not None:
        start_label = f"{start_label} samples; the fine-tuning restarts from base model {release}"
    res = train_policy(cfg, start, release, paths=paths, rft=config.nested_lib(RFT_PREFIX), restart_from=restart,
                       telemetry=ray.telemetry(storage.telemetry()), log_date=max(log_partitions, default=None),
                       data_partitions={"dagster_run_id": context.run_id, "log_partitions": log_partitions},
                       **ray.training_kwargs(rollout_engine.generator_factory(), rollout_engine.sample_engine()))
    storage.link_dagster_run(res.mlflow_run_id, context.run_id)
    return dg.MaterializeResult(
        metadata={**policy_metadata(res, log_partitions, start_label, paths.home), **ray.metadata()},  # + Ray dashboard, fleet shares
        check_results=[dg.AssetCheckResult(check_name="rlvr_run_sound", passed=res.sound,
                                           metadata={"steps": res.steps_done, "finished": res.finished})],
    )


ASSETS = [rlvr_policy]
