"""`eval_report` -> `deployed_model` under dagster.materialize(): the decontamination alarm blocks deployment, the gate refuses then promotes, and the registered version carries its lineage."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg

from flywheel_dagster.assets.partitions import base_models


def _write_task_pool(warehouse: Path, prompts: list[str]) -> None:
    """A `task_pool` table (mining's column contract) holding `prompts`."""
    import duckdb

    from flywheel.mining.pool import TASK_POOL_COLUMNS

    con = duckdb.connect(str(warehouse))
    cols = ", ".join(f"{n} {t}" for n, t in TASK_POOL_COLUMNS)
    con.execute(f"CREATE OR REPLACE TABLE task_pool ({cols})")
    con.executemany("INSERT INTO task_pool (task_id, domain, prompt) VALUES (?, ?, ?)",
                    [(f"t{i}", "math", p) for i, p in enumerate(prompts)])
    con.close()


def _record_upstream(instance: dg.DagsterInstance, paths, base: Path, policy: Path) -> str:
    """What `base_model` and `rlvr_policy` record for partition tiny-test (a real MLflow training run);
    returns the training run's id."""
    from flywheel.train.common.telemetry import Telemetry

    tele = Telemetry(paths.mlflow_uri, artifact_root=paths.mlflow_artifacts)
    run_id = tele.start("rlvr-tiny-test", {"steps": 1})
    tele.finish()
    for asset, metadata in (("base_model", {"path": dg.MetadataValue.path(str(base))}),
                            ("rlvr_policy", {"policy_path": dg.MetadataValue.path(str(policy)), "mlflow_run_id": run_id,
                                             "log_partitions": dg.MetadataValue.json(["2026-12-01", "2026-12-02"])})):
        instance.report_runless_asset_event(dg.AssetMaterialization(asset, partition="tiny-test", metadata=metadata))
    return run_id


def test_eval_report_and_deployed_model_materialize(flywheel_home, storage, seed_mlflow_db, random_tiny):
    """Contaminated pool blocks deployment; a clean one runs the gate, which refuses, then promotes."""
    import shutil

    import mlflow
    import torch

    from flywheel.tasks.suites import heldout_suite, train_suite
    from flywheel_dagster.assets.deployment import deployed_model
    from flywheel_dagster.assets.evaluation import eval_report
    from flywheel_dagster.resources.gpu import GpuResource
    from flywheel_dagster.resources.rollout import RolloutEngineResource

    torch.set_num_threads(1)
    seed_mlflow_db(flywheel_home)
    base = random_tiny(flywheel_home.models / "base" / "tiny-test")
    policy = shutil.copytree(base, flywheel_home.models / "policies" / "tiny-test")
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(base_models.name, ["tiny-test"])
    training_run = _record_upstream(instance, flywheel_home, base, policy)
    run_config = {"ops": {
        "eval_report": {"config": {"n_samples": 1, "tasks_math": 2, "tasks_code": 1, "tasks_agent": 1,
                                   "max_new_tokens": 16, "max_steps": 2}},
        "deployed_model": {"config": {"margin": 0.0}},
    }}
    resources = {"gpu": GpuResource(device="cpu"), "storage": storage, "rollout_engine": RolloutEngineResource()}
    pool = [t.prompt for t in train_suite("math", 40)]
    _write_task_pool(flywheel_home.warehouse, [*pool, heldout_suite("math")[0].prompt])
    res = dg.materialize([eval_report, deployed_model], partition_key="tiny-test", instance=instance,
                         resources=resources, run_config=run_config, raise_on_error=False)
    checks = {c.check_name: c for c in res.get_asset_check_evaluations()}
    assert not checks["eval_set_decontaminated"].passed  # the alarm, and it blocks deployment
    assert checks["eval_set_decontaminated"].metadata["exact_overlap"].value == 1
    assert "deployed_model" not in {m.asset_key.to_user_string() for m in res.get_asset_materialization_events()}

    _write_task_pool(flywheel_home.warehouse, pool)
    res = dg.materialize([eval_report, deployed_model], partition_key="tiny-test", instance=instance,
                         resources=resources, run_config=run_config)
    assert res.success
    mats = {m.asset_key.to_user_string(): m for m in res.get_asset_materialization_events()}
    meta = mats["eval_report"].materialization.metadata
    assert "data:image/png;base64," in meta["report"].value and "before/overall/pass@1" in meta
    checks = {c.check_name: c for c in res.get_asset_check_evaluations()}
    assert checks["eval_set_decontaminated"].passed
    dep = mats["deployed_model"].materialization.metadata
    # same weights as the base: no gain over the margin, so the base model stays champion
    assert dep["promoted"].value is False and "does not beat the margin" in dep["reason"].value
    assert dep["champion"].value == "flywheel-policy:1" and dep["candidate"].value == "flywheel-policy:2"
    assert checks["champion_not_regressed"].passed
    manifest = json.loads(Path(dep["serving_manifest"].value).with_suffix(".json").read_text())
    assert manifest["served_model_name"] == "flywheel-policy:2"
    # the registered weights are a snapshot: retraining into policies/<base> cannot change a version
    assert Path(manifest["model_path"]).parent == flywheel_home.models / "registry"
    # lineage: the version carries the log partitions rlvr_policy recorded, and MLflow links its training run
    client = mlflow.MlflowClient(flywheel_home.mlflow_uri, registry_uri=flywheel_home.mlflow_uri)
    mv = client.get_model_version("flywheel-policy", "2")
    assert json.loads(mv.tags["flywheel.log_partitions"]) == ["2026-12-01", "2026-12-02"]
    assert mv.run_id == training_run == mv.tags["flywheel.training_run_id"]
    assert mv.source.startswith(f"runs:/{training_run}/") and mv.tags["flywheel.dagster_run_id"] == res.run_id
    assert client.get_run(training_run).data.tags["flywheel.registered_versions"] == "flywheel-policy:2"
    assert not client.get_model_version("flywheel-policy", "1").run_id  # the base model: no empty registration run
    # the metadata links the MLflow UI: the eval run and the registered version
    eval_run = client.get_run(mv.tags["flywheel.eval_run_id"])
    assert meta["mlflow_run"].value == \
        f"http://127.0.0.1:5000/#/experiments/{eval_run.info.experiment_id}/runs/{eval_run.info.run_id}"
    assert isinstance(dep["mlflow_model_version"], dg.UrlMetadataValue)
    assert dep["mlflow_model_version"].value == "http://127.0.0.1:5000/#/models/flywheel-policy/versions/2"
    assert dep["mlflow_champion_version"].value == "http://127.0.0.1:5000/#/models/flywheel-policy/versions/1"
    folder = mv.source.removeprefix(f"runs:/{training_run}/")
    assert {Path(f.path).name for f in client.list_artifacts(training_run, folder)} >= {"MODEL_PATH", "serving.json"}
    # a negative margin promotes an equal candidate: the gate both ways through the asset (canary off: one phase;
    # the two-phase promotion through the canary is tests/assets/test_canary.py)
    res = dg.materialize([deployed_model], partition_key="tiny-test", instance=instance, resources=resources,
                         run_config={"ops": {"deployed_model": {"config": {"margin": -0.01, "canary": False}}}})
    dep = next(iter(res.get_asset_materialization_events())).materialization.metadata
    assert dep["promoted"].value is True and dep["champion"].value == "flywheel-policy:3"
