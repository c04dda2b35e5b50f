"""`rlvr_policy`: GRPO on the mined task pool with the validated verifiers, per base model."""


import base64

import dagster as dg

from assets.metadata import latest_metadata, upstream_value
from assets.partitions import base_models
from flywheel.gpu import GpuSpec
from flywheel.train.recipe import TINY_RLVR, domain_weights
from resources.gpu import GpuResource, gpu_op_tags
from resources.storage import StorageResource
from resources.trainer import TrainerResource

TRAIN_GPU = GpuSpec(count=1)
"""The update and the rollouts share one GPU where there is one (CPU otherwise); one training run per pool."""


class RlvrConfig(dg.Config):
    """What the training run does (`.to_lib()` -> `GRPOConfig`); where it runs is `TrainerResource`.
    Defaults: the measured tiny-model recipe (`flywheel.train.recipe`)."""

    steps: int = TINY_RLVR["steps"]
    prompts_per_step: int = TINY_RLVR["prompts_per_step"]
    group_size: int = TINY_RLVR["group_size"]
    lr: float = TINY_RLVR["lr"]
    lr_schedule: str = TINY_RLVR["lr_schedule"]
    advantage: str = TINY_RLVR["advantage"]
    temperature: float = TINY_RLVR["temperature"]
    max_new_tokens: int = TINY_RLVR["max_new_tokens"]
    max_refill_rounds: int = TINY_RLVR["max_refill_rounds"]
    micro_batch_size: int = TINY_RLVR["micro_batch_size"]
    domain_weights: dict[str, float] = domain_weights()
    kl_coef: float = 0.0
    seed: int = 0
    backend: str = ""  # empty: the TrainerResource's backend
    checkpoint_every: int = 10
    time_budget_s: float = 0.0  # 0: no wall-clock cap

    def to_lib(self, placement: dict | None = None):
        from flywheel.train.config import GRPOConfig

        place = dict(placement or {})
        if self.backend:
            place["backend"] = self.backend
        return GRPOConfig(
            seed=self.seed, steps=self.steps, prompts_per_step=self.prompts_per_step, group_size=self.group_size,
            lr=self.lr, lr_schedule=self.lr_schedule, advantage=self.advantage, temperature=self.temperature,
            max_new_tokens=self.max_new_tokens, max_refill_rounds=self.max_refill_rounds,
            micro_batch_size=self.micro_batch_size, domain_weights=dict(self.domain_weights), kl_coef=self.kl_coef, checkpoint_every=self.checkpoint_every,
            **place,
        )


@dg.asset(
    partitions_def=base_models, deps=["base_model", "task_pool", "verifiers"], group_name="training",
    kinds={"pytorch", "mlflow"}, pool=TRAIN_GPU.pool, op_tags=gpu_op_tags(TRAIN_GPU),
    check_specs=[dg.AssetCheckSpec("rlvr_run_sound", asset="rlvr_policy", blocking=True,
                                   description="The run finished all steps with finite rewards and saved a policy.")],
    description="GRPO (group-normalized advantages, clipped ratio, dynamic sampling) of the base model on the "
                "task pool, rewards from the validated verifiers; policy at models/policies/<partition>.",
)
def rlvr_policy(context: dg.AssetExecutionContext, config: RlvrConfig, gpu: GpuResource, trainer: TrainerResource,
                storage: StorageResource) -> dg.MaterializeResult:
    import math

    from flywheel.train.api import train_policy

    release = context.partition_key
    cfg = config.to_lib(trainer.placement(gpu.torch_device(TRAIN_GPU)))
    log_partitions = list(latest_metadata(context.instance, "task_pool").get("log_partitions") or [])
    res = train_policy(cfg, upstream_value(context, "base_model", "path"), release, paths=storage.paths(),
                       telemetry=storage.telemetry(),
                       data_partitions={"dagster_run_id": context.run_id, "log_partitions": log_partitions},
                       time_budget_s=config.time_budget_s or None)
    rewards = [h.get("reward/mean", float("nan")) for h in res.history]
    png = base64.b64encode(res.curve_png.read_bytes()).decode() if res.curve_png else ""
    sound = res.finished and res.policy_dir is not None and all(math.isfinite(r) for r in rewards)
    return dg.MaterializeResult(
        metadata={
            "policy_path": dg.MetadataValue.path(str(res.policy_dir)),
            "log_partitions": dg.MetadataValue.json(log_partitions),
            "mlflow_run_id": res.mlflow_run_id or "", "mlflow_run": dg.MetadataValue.text(res.mlflow_run_url or ""),
            "final_reward": dg.MetadataValue.float(float(res.final_reward)),
            "steps": res.steps_done, "wall_s": round(res.wall_s, 1),
            "reward_curve": dg.MetadataValue.md(f"![reward curve](data:image/png;base64,{png})"),
            **{k.replace("/", "_"): round(v, 4) for k, v in res.idle_shares.items()},
        },
        check_results=[dg.AssetCheckResult(check_name="rlvr_run_sound", passed=sound,
                                           metadata={"steps": res.steps_done, "finished": res.finished})],
    )


ASSETS = [rlvr_policy]
