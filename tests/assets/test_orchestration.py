"""Jobs, schedule and sensors of the flywheel, and eval_report -> deployed_model under dagster.materialize()."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pytest

from assets.orchestration import (
    BASE_MODEL_ASSETS,
    DAILY_ASSETS,
    base_model_job,
    base_model_release_sensor,
    current_base_model,
    daily_logs_job,
    daily_turn_schedule,
)
from assets.partitions import base_models, daily_logs
from tests.test_registry import seed_mlflow_db


def _checkpoint(root: Path, name: str, complete: bool = True) -> Path:
    d = root / name
    d.mkdir(parents=True)
    (d / "config.json").write_text("{}")
    if complete:
        (d / "model.safetensors").write_bytes(b"\0")
    return d


def test_jobs_split_by_partitions_and_schedule_targets_daily_job():
    from assets.definitions import defs

    daily, model = defs.resolve_job_def("daily_logs_job"), defs.resolve_job_def("base_model_job")
    assert daily.partitions_def == daily_logs and model.partitions_def == base_models
    graph = defs.resolve_asset_graph()
    assert {k.to_user_string() for k in graph.get_all_asset_keys()} >= set(DAILY_ASSETS) | set(BASE_MODEL_ASSETS)
    assert daily_turn_schedule.job_name == daily_logs_job.name and daily_turn_schedule.cron_schedule == "0 2 * * *"
    assert base_model_job.tags["flywheel/gpu"]  # dagster.yaml limits runs with this tag to one at a time
    for key in ("eval_report", "deployed_model"):
        node = graph.get(dg.AssetKey(key))
        assert node.description and node.owners and node.group_name in ("evaluation", "deployment")


def test_release_sensor_adds_partitions_and_requests_backfills(tmp_path):
    from resources.storage import StorageResource

    releases = tmp_path / "releases"
    storage = StorageResource(home=str(tmp_path / "home"), releases_dir=str(releases))
    instance = dg.DagsterInstance.ephemeral()

    def tick():
        return base_model_release_sensor(dg.build_sensor_context(instance=instance, resources={"storage": storage}))

    assert isinstance(tick(), dg.SkipReason)  # folder does not exist yet

    _checkpoint(releases, "llama-3b-v1")
    _checkpoint(releases, "copying-still", complete=False)
    (releases / "not-a-model").mkdir()
    result = tick()
    assert isinstance(result, dg.SensorResult)
    [add] = result.dynamic_partitions_requests
    assert add.partitions_def_name == base_models.name and list(add.partition_keys) == ["llama-3b-v1"]
    [req] = result.run_requests
    assert req.partition_key == "llama-3b-v1" and req.run_key == "base-model-release:llama-3b-v1"
    assert req.tags["flywheel/trigger"] == "base_model_release"

    instance.add_dynamic_partitions(base_models.name, list(add.partition_keys))  # what the daemon does
    assert isinstance(tick(), dg.SkipReason)
    (releases / "copying-still" / "model.safetensors").write_bytes(b"\0")  # the copy finished
    _checkpoint(releases, "llama-3b-v2")
    result = tick()
    assert sorted(result.dynamic_partitions_requests[0].partition_keys) == ["copying-still", "llama-3b-v2"]
    assert sorted(r.partition_key for r in result.run_requests) == ["copying-still", "llama-3b-v2"]


def test_release_sensor_targets_the_backfill_chain():
    """The sensor's runs are `base_model_job` runs: base_model -> rlvr_policy -> eval_report -> deployed_model."""
    from assets.definitions import defs

    sensor = defs.resolve_sensor_def("base_model_release_sensor")
    job = defs.resolve_job_def(sensor.job_name)
    assert job.name == "base_model_job" and job.partitions_def == base_models
    assert {k.to_user_string() for k in job.asset_layer.selected_asset_keys} == set(BASE_MODEL_ASSETS)
    daily = defs.resolve_job_def("daily_logs_job")
    assert {k.to_user_string() for k in daily.asset_layer.selected_asset_keys} == set(DAILY_ASSETS)
    chain = defs.resolve_sensor_def("chain_base_model_job")
    assert chain.job_name == "base_model_job"


def test_chained_job_follows_the_champion_base_model(flywheel_home, tmp_path):
    from flywheel.registry.mlflow_registry import Registry

    seed_mlflow_db(flywheel_home)
    uri = flywheel_home.mlflow_uri
    instance = dg.DagsterInstance.ephemeral()
    assert current_base_model(instance, uri) == "tiny-v1"  # nothing known: the embedded default
    instance.add_dynamic_partitions(base_models.name, ["tiny-v1", "tiny-v2"])
    assert current_base_model(instance, uri) == "tiny-v2"  # no champion: the newest release
    reg = Registry(uri)
    reg.ensure_champion(tmp_path, "tiny-v1")
    assert current_base_model(instance, uri) == "tiny-v1"  # the champion's base model


def test_chain_sensor_requests_base_model_run_after_a_day(flywheel_home, storage):
    from assets.orchestration import TURN_TAG, chain_base_model_job

    seed_mlflow_db(flywheel_home)
    instance = dg.DagsterInstance.ephemeral()

    def tick(tags):
        run = dg.DagsterRun(job_name="daily_logs_job", run_id="day-run-1", tags=tags,
                            status=dg.DagsterRunStatus.SUCCESS)
        ev = dg.DagsterEvent(event_type_value="PIPELINE_SUCCESS", job_name="daily_logs_job")
        return chain_base_model_job(dg.build_run_status_sensor_context(
            sensor_name="chain_base_model_job", dagster_event=ev, dagster_instance=instance, dagster_run=run,
            resources={"storage": storage}))

    first = tick({"dagster/partition": "2026-12-01"})
    [req] = first.run_requests  # no partition yet: it is added with the request
    assert req.partition_key == "tiny-v1" and req.tags["flywheel/log_partition"] == "2026-12-01"
    assert list(first.dynamic_partitions_requests[0].partition_keys) == ["tiny-v1"]
    instance.add_dynamic_partitions(base_models.name, ["tiny-v1"])
    assert tick({"dagster/partition": "2026-12-02"}).partition_key == "tiny-v1"
    assert isinstance(tick({TURN_TAG: "2026-12-02"}), dg.SkipReason)


def _tiny_checkpoint(path: Path) -> Path:
    from tests.test_evaluation import _random_tiny

    return _random_tiny(path)


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
    from flywheel.train.telemetry import Telemetry

    tele = Telemetry(paths.mlflow_uri, artifact_root=paths.mlflow_artifacts)
    run_id = tele.start("rlvr-tiny-test", {"steps": 1})
    tele.finish()
    for asset, metadata in (("base_model", {"path": dg.MetadataValue.path(str(base))}),
                            ("rlvr_policy", {"policy_path": dg.MetadataValue.path(str(policy)), "mlflow_run_id": run_id,
                                             "log_partitions": dg.MetadataValue.json(["2026-12-01", "2026-12-02"])})):
        instance.report_runless_asset_event(dg.AssetMaterialization(asset, partition="tiny-test", metadata=metadata))
    return run_id


def test_eval_report_and_deployed_model_materialize(flywheel_home, storage):
    """Contaminated pool blocks deployment; a clean one runs the gate, which refuses, then promotes."""
    import shutil

    import mlflow
    import torch

    from assets.deployment import deployed_model
    from assets.evaluation import eval_report
    from flywheel.tasks.suites import heldout_suite, train_suite
    from resources.gpu import GpuResource

    torch.set_num_threads(1)
    seed_mlflow_db(flywheel_home)
    base = _tiny_checkpoint(flywheel_home.models / "base" / "tiny-test")
    policy = shutil.copytree(base, flywheel_home.models / "policies" / "tiny-test")
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(base_models.name, ["tiny-test"])
    training_run = _record_upstream(instance, flywheel_home, base, policy)
    run_config = {"ops": {
        "eval_report": {"config": {"n_samples": 1, "tasks_math": 2, "tasks_code": 1, "tasks_agent": 1,
                                   "max_new_tokens": 16, "max_steps": 2}},
        "deployed_model": {"config": {"margin": 0.0}},
    }}
    resources = {"gpu": GpuResource(device="cpu"), "storage": storage}
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
    folder = mv.source.removeprefix(f"runs:/{training_run}/")
    assert {Path(f.path).name for f in client.list_artifacts(training_run, folder)} >= {"MODEL_PATH", "serving.json"}
    # a negative margin promotes an equal candidate: the gate both ways through the asset
    res = dg.materialize([deployed_model], partition_key="tiny-test", instance=instance, resources=resources,
                         run_config={"ops": {"deployed_model": {"config": {"margin": -0.01}}}})
    dep = next(iter(res.get_asset_materialization_events())).materialization.metadata
    assert dep["promoted"].value is True and dep["champion"].value == "flywheel-policy:3"


@pytest.mark.parametrize("kind", ["multiprocess", "in_process"])
def test_executor_switch(kind, monkeypatch):
    from assets.orchestration import executor_from_env

    monkeypatch.setenv("FLYWHEEL_EXECUTOR", kind)
    assert executor_from_env().name == kind
    monkeypatch.setenv("FLYWHEEL_EXECUTOR", "bogus")
    with pytest.raises(ValueError):
        executor_from_env()
