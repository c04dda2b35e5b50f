"""Stage: the base model, one dynamic partition per release (`tiny-v1`, or a checkpoint folder name).

No `from __future__ import annotations` here: Dagster reads the config class from the real annotation.
"""


import dagster as dg
from pydantic import Field

from flywheel_dagster.assets.metadata import home_relative
from flywheel_dagster.assets.partitions import base_models
from flywheel_dagster.resources.storage import StorageResource


class BaseModelConfig(dg.Config):
    """`rebuild`: ignore the cached tiny build; `models_dir`: another folder holding checkpoints by name."""

    rebuild: bool = Field(default=False, description="ignore the cached tiny build and build it again")
    models_dir: str = Field(default="", description="another folder holding checkpoints by name (empty: the "
                                                    "storage home's models/base)")


@dg.asset(
    partitions_def=base_models, group_name="models", kinds={"pytorch"},
    description="The base model of a release: the tiny model built offline (cached by recipe hash) "
                "for tiny-* releases, else a local Hugging Face checkpoint folder.",
)
def base_model(context: dg.AssetExecutionContext, config: BaseModelConfig,
               storage: StorageResource) -> dg.MaterializeResult:
    from flywheel.models import resolve_base_model  # torch + transformers: loaded when the asset runs

    info = resolve_base_model(context.partition_key, storage.paths(), models_dir=config.models_dir or None,
                              rebuild=config.rebuild)
    meta: dict = {
        "path": dg.MetadataValue.path(home_relative(info.path, storage.paths().home)), "kind": info.kind,
        "params": info.params,
        "vocab": info.vocab, "cached": info.cached, "build_seconds": info.seconds,
    }
    if info.recipe_hash:
        meta["recipe_hash"] = info.recipe_hash
    for domain, rates in info.pass_rates.items():
        for k, v in rates.items():
            if k != "n_tasks":
                meta[f"heldout_{domain}_{k}"] = float(v)
    return dg.MaterializeResult(metadata=meta)


@dg.asset_check(asset=base_model, blocking=True, description="The checkpoint folder loads with the HF loader.")
def base_model_loads(context: dg.AssetCheckExecutionContext, storage: StorageResource) -> dg.AssetCheckResult:
    # torch + transformers: loaded when the check runs, not when the Definitions load
    from flywheel.models import resolve_base_model
    from flywheel.rollout.checkpoint import is_checkpoint_dir, load_tokenizer

    # resolve again (a cached lookup for tiny releases) rather than trusting metadata alone
    key = context.run.tags.get("dagster/partition") if context.run else None
    if not key:
        return dg.AssetCheckResult(passed=False, description="no partition key on the run")
    info = resolve_base_model(key, storage.paths())
    ok = is_checkpoint_dir(info.path) and load_tokenizer(info.path).eos_token_id is not None
    return dg.AssetCheckResult(passed=bool(ok), metadata={"path": str(info.path)})


ASSETS = [base_model]
CHECKS = [base_model_loads]
