"""Jobs, schedule, sensors and executor of the flywheel, and the GPU concurrency limits in dagster.yaml."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest
import yaml

from flywheel.defaults import DEFAULT_BASE_MODEL
from flywheel_dagster.assets.orchestration import (
    BASE_MODEL_ASSETS,
    DAILY_ASSETS,
    base_model_job,
    base_model_release_sensor,
    current_base_model,
    daily_logs_job,
    daily_turn_schedule,
)
from flywheel_dagster.assets.partitions import base_models, daily_logs


def _checkpoint(root: Path, name: str, complete: bool = True) -> Path:
    d = root / name
    d.mkdir(parents=True)
    (d / "config.json").write_text("{}")
    if complete:
        (d / "model.safetensors").write_bytes(b"\0")
    return d


def test_jobs_split_by_partitions_and_schedule_targets_daily_job():
    from flywheel_dagster.assets.definitions import defs

    daily, model = defs.resolve_job_def("daily_logs_job"), defs.resolve_job_def("base_model_job")
    assert daily.partitions_def == daily_logs and model.partitions_def == base_models
    graph = defs.resolve_asset_graph()
    assert {k.to_user_string() for k in graph.get_all_asset_keys()} >= set(DAILY_ASSETS) | set(BASE_MODEL_ASSETS)
    assert daily_turn_schedule.job_name == daily_logs_job.name and daily_turn_schedule.cron_schedule == "0 2 * * *"
    assert base_model_job.tags["flywheel/gpu"]  # dagster.yaml limits runs with this tag to one at a time
    for key in ("eval_report", "deployed_model"):
        node = graph.get(dg.AssetKey(key))
        assert node.description and node.owners and node.group_name in ("evaluation", "deployment")


@pytest.mark.parametrize(("tick", "day"), [("2026-12-04T02:00:00+00:00", "2026-12-03"),
                                           ("2026-12-01T02:00:00+00:00", "2026-11-30")])
def test_schedule_runs_the_day_that_just_ended(tick, day):
    """daily_logs ends a day ahead (a turn may run today by hand); the 02:00 tick still runs yesterday, whose
    traffic the daily job's first asset (production_traffic) serves and writes."""
    from datetime import datetime

    from flywheel_dagster.assets.definitions import defs

    schedule = defs.resolve_schedule_def("daily_turn_schedule")
    context = dg.build_schedule_context(instance=dg.DagsterInstance.ephemeral(),
                                        repository_def=defs.get_repository_def(),
                                        scheduled_execution_time=datetime.fromisoformat(tick))
    [request] = schedule.evaluate_tick(context).run_requests
    assert request.partition_key == day and request.run_key == day
    assert DAILY_ASSETS[0] == "production_traffic"


def test_release_sensor_adds_partitions_and_requests_backfills(tmp_path):
    from flywheel_dagster.resources.storage import StorageResource

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
    from flywheel_dagster.assets.definitions import defs

    sensor = defs.resolve_sensor_def("base_model_release_sensor")
    job = defs.resolve_job_def(sensor.job_name)
    assert job.name == "base_model_job" and job.partitions_def == base_models
    assert {k.to_user_string() for k in job.asset_layer.selected_asset_keys} == set(BASE_MODEL_ASSETS)
    daily = defs.resolve_job_def("daily_logs_job")
    assert {k.to_user_string() for k in daily.asset_layer.selected_asset_keys} == set(DAILY_ASSETS)
    chain = defs.resolve_sensor_def("chain_base_model_job")
    assert chain.job_name == "base_model_job"


def test_chained_job_follows_the_champion_base_model(flywheel_home, seed_mlflow_db, tmp_path):
    from flywheel.registry.mlflow_registry import Registry

    seed_mlflow_db(flywheel_home)
    uri = flywheel_home.mlflow_uri
    instance = dg.DagsterInstance.ephemeral()
    assert current_base_model(instance, uri) == DEFAULT_BASE_MODEL  # nothing known: the embedded default
    instance.add_dynamic_partitions(base_models.name, ["tiny-v1", "tiny-v2"])
    assert current_base_model(instance, uri) == "tiny-v2"  # no champion: the newest release
    reg = Registry(uri)
    reg.ensure_champion(tmp_path, "tiny-v1")
    assert current_base_model(instance, uri) == "tiny-v1"  # the champion's base model


def test_chain_sensor_requests_base_model_run_after_a_day(flywheel_home, storage, seed_mlflow_db):
    from flywheel_dagster.assets.orchestration import TURN_TAG, chain_base_model_job

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
    assert req.partition_key == DEFAULT_BASE_MODEL and req.tags["flywheel/log_partition"] == "2026-12-01"
    assert list(first.dynamic_partitions_requests[0].partition_keys) == [DEFAULT_BASE_MODEL]
    instance.add_dynamic_partitions(base_models.name, [DEFAULT_BASE_MODEL])
    assert tick({"dagster/partition": "2026-12-02"}).partition_key == DEFAULT_BASE_MODEL
    assert isinstance(tick({TURN_TAG: "2026-12-02"}), dg.SkipReason)


@pytest.mark.parametrize("kind", ["multiprocess", "in_process"])
def test_executor_switch(kind, monkeypatch):
    from flywheel_dagster.assets.orchestration import executor_from_env

    monkeypatch.setenv("FLYWHEEL_EXECUTOR", kind)
    assert executor_from_env().name == kind
    monkeypatch.setenv("FLYWHEEL_EXECUTOR", "bogus")
    with pytest.raises(ValueError):
        executor_from_env()


def test_pools_and_gpu_run_limit_in_dagster_yaml():
    cfg = yaml.safe_load((Path(__file__).resolve().parents[2] / "dagster.yaml").read_text())
    assert cfg["concurrency"]["pools"]["default_limit"] == 1  # one step per GPU pool at a time
    limits = {x["key"]: x["limit"] for x in cfg["concurrency"]["runs"]["tag_concurrency_limits"]}
    from flywheel_dagster.assets.orchestration import base_model_job

    assert "flywheel/gpu" in base_model_job.tags and limits["flywheel/gpu"] == 1
