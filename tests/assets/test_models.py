"""The `base_model` asset: dynamic partitions, tiny build cache, bringing an HF checkpoint, the load check."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from flywheel_dagster.assets.metadata import upstream_path
from flywheel_dagster.assets.partitions import base_models
from flywheel_dagster.resources.storage import StorageResource


def _materialize(instance: dg.DagsterInstance, storage, key: str, config: dict | None = None) -> dg.ExecuteInJobResult:
    from flywheel_dagster.assets.models import base_model

    instance.add_dynamic_partitions("base_model", [key])
    run_config = {"ops": {"base_model": {"config": config}}} if config else None
    return dg.materialize([base_model], instance=instance, partition_key=key, run_config=run_config,
                          resources={"storage": storage})


def _meta(result: dg.ExecuteInJobResult) -> dict:
    mats = result.asset_materializations_for_node("base_model")
    assert len(mats) == 1
    return {k: getattr(v, "value", v) for k, v in mats[0].metadata.items()}


def test_tiny_release_partition_builds_once_then_reuses(install_tiny_quick, flywheel_home, storage):
    install_tiny_quick(flywheel_home.models)  # the session's build, same recipe hash
    with dg.instance_for_test() as instance:
        res = _materialize(instance, storage, "tiny-quick")
        assert res.success
        meta = _meta(res)
        assert meta["kind"] == "tiny" and meta["cached"] is True
        assert meta["path"] == "models/base/tiny-quick"  # relative to the home: a moved home still finds it
        assert meta["params"] > 50_000 and meta["vocab"] > 100
        assert {"heldout_math_pass@1", "heldout_code_pass@1", "heldout_agent_pass@1"} <= set(meta)
        assert instance.get_dynamic_partitions("base_model") == ["tiny-quick"]


def test_checkpoint_folder_partition_registers_the_users_model(tiny_model_dir, storage, tmp_path):
    import shutil

    models = tmp_path / "my_models"
    shutil.copytree(tiny_model_dir, models / "llama-mine")
    with dg.instance_for_test() as instance:
        res = _materialize(instance, storage, "llama-mine", {"models_dir": str(models)})
        meta = _meta(res)
        assert meta["kind"] == "hf" and meta["path"] == str((models / "llama-mine").resolve())
        assert meta["cached"] is False and "recipe_hash" not in meta


def test_unknown_release_fails_with_a_clear_error(storage):
    from flywheel_dagster.assets.models import base_model

    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("base_model", ["qwen-missing"])
        res = dg.materialize([base_model], instance=instance, partition_key="qwen-missing", raise_on_error=False,
                             resources={"storage": storage})
        assert not res.success
        failure = [e for e in res.all_events if e.is_step_failure][0]
        assert "no HF checkpoint folder" in str(failure.step_failure_data.error)


def test_load_check_passes_for_a_built_release(install_tiny_quick, flywheel_home, storage):
    from flywheel_dagster.assets.models import base_model, base_model_loads

    install_tiny_quick(flywheel_home.models)
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("base_model", ["tiny-quick"])
        res = dg.materialize([base_model, base_model_loads], instance=instance, partition_key="tiny-quick",
                             resources={"storage": storage})
        assert res.success
        evals = res.get_asset_check_evaluations()
        assert len(evals) == 1 and evals[0].passed


def test_definitions_include_base_model_and_rollout_engine():
    from flywheel_dagster.assets.definitions import build_definitions
    from flywheel_dagster.resources.rollout import RolloutEngineResource

    defs = build_definitions()
    assert defs.get_assets_def("base_model").partitions_def.name == "base_model"
    assert isinstance(defs.resources["rollout_engine"], RolloutEngineResource)


@dg.asset(partitions_def=base_models, deps=["base_model"])
def reads_base_model(context, storage: StorageResource) -> dg.MaterializeResult:
    """A later stage: finds the base model where `base_model` recorded it."""
    found = upstream_path(context, "base_model", "path", storage.paths().home)
    return dg.MaterializeResult(metadata={"found": found, "loads": (Path(found) / "config.json").is_file()})


def test_a_moved_home_still_finds_its_base_model(install_tiny_quick, tmp_path):
    """issue 27: paths recorded in metadata were absolute, so a moved home read (or missed) the old one."""
    import shutil

    old, new = tmp_path / "old_home", tmp_path / "moved" / "home"
    install_tiny_quick(StorageResource(home=str(old)).paths().models)
    with dg.instance_for_test() as instance:
        assert _materialize(instance, StorageResource(home=str(old)), "tiny-quick").success
        new.parent.mkdir()
        shutil.move(old, new)
        res = dg.materialize([reads_base_model], instance=instance, partition_key="tiny-quick",
                             resources={"storage": StorageResource(home=str(new))})
        meta = res.asset_materializations_for_node("reads_base_model")[0].metadata
        assert meta["found"].value == str(new.resolve() / "models" / "base" / "tiny-quick") and meta["loads"].value
