"""`production_traffic` closes the loop on a schedule: the daily job serves the champion, writes the day's raw
logs and mines them without `flywheel turn`; existing logs are never overwritten; a day without logs skips."""

from __future__ import annotations

from datetime import datetime, timezone

import dagster as dg
import duckdb
import pytest

DAY = "2026-12-03"
SMALL = {  # a tiny day: 50 requests, short answers, a handful of verifiers
    "production_traffic": {"config": {"records": 50, "seed": 1, "serve_max_new_tokens": 16, "serve_max_steps": 2}},
    "verifiers": {"config": {"max_tasks": 4, "slow_probes": False, "code_timeout_s": 1.5}},
}


@pytest.fixture
def daily(flywheel_home, seed_mlflow_db, monkeypatch):
    """The Definitions on a fresh home (seeded MLflow store, no champion yet) and an ephemeral instance."""
    import torch

    from flywheel_dagster.assets.definitions import build_definitions

    torch.set_num_threads(1)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    seed_mlflow_db(flywheel_home)
    return build_definitions(), dg.DagsterInstance.ephemeral()


def _meta(result: dg.ExecuteInProcessResult, node: str) -> dict:
    [mat] = result.asset_materializations_for_node(node)
    return {k: getattr(v, "value", v) for k, v in mat.metadata.items()}


def _materialized(result: dg.ExecuteInProcessResult) -> set[str]:
    return {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()}


def _models(warehouse, day: str) -> set[str]:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        rows = con.execute("SELECT DISTINCT model FROM task_logs WHERE log_date = ?", [day]).fetchall()
        return {m for (m,) in rows}
    finally:
        con.close()


def test_daily_schedule_serves_the_champion_without_a_turn(daily, flywheel_home, storage, random_tiny,
                                                           local_sandbox, tmp_path):
    """The issue's done: the schedule's job, for a day no `flywheel turn` touched, creates a new raw-log
    partition served by the champion, and mines it."""
    from flywheel.registry.mlflow_registry import Registry

    defs, instance = daily
    champion = Registry(flywheel_home.mlflow_uri).ensure_champion(random_tiny(tmp_path / "tiny"), "tiny-test")
    schedule = defs.resolve_schedule_def("daily_turn_schedule")
    tick = schedule.evaluate_tick(dg.build_schedule_context(
        instance=instance, repository_def=defs.get_repository_def(),
        scheduled_execution_time=datetime(2026, 12, 4, 2, 0, tzinfo=timezone.utc)))  # the tick after DAY ended
    [request] = tick.run_requests
    assert request.partition_key == DAY and not (flywheel_home.raw_logs / DAY).exists()

    result = defs.resolve_job_def(schedule.job_name).execute_in_process(
        partition_key=request.partition_key, instance=instance, tags=request.tags, run_config={"ops": SMALL})
    assert result.success
    traffic = _meta(result, "production_traffic")
    assert traffic["written"] and traffic["served_by"] == champion.uri == "flywheel-policy:1"
    assert traffic["path"] == str(flywheel_home.raw_logs / DAY) and 0 < traffic["records"] <= 50
    assert _meta(result, "raw_task_logs")["ingested"] > 0
    assert _models(flywheel_home.warehouse, DAY) == {champion.uri}  # the champion's own answers were mined
    assert _materialized(result) == {"production_traffic", "raw_task_logs", "task_logs", "failure_cases",
                                     "task_pool", "verifiers"}
    # and the day's success chains the model side (base_model_job for the champion's base model)
    from flywheel_dagster.assets.orchestration import chain_base_model_job

    run = instance.get_run_by_id(result.run_id)
    tick = chain_base_model_job(dg.build_run_status_sensor_context(
        sensor_name="chain_base_model_job", dagster_instance=instance, dagster_run=run,
        dagster_event=dg.DagsterEvent(event_type_value="PIPELINE_SUCCESS", job_name="daily_logs_job"),
        resources={"storage": storage}))
    assert [r.tags["flywheel/log_partition"] for r in tick.run_requests] == [DAY]


def test_existing_logs_are_not_overwritten(daily, flywheel_home, write_jsonl, rec):
    """Real logs win: a day that already has logs keeps them; the materialization says why nothing was written."""
    defs, instance = daily
    job = defs.resolve_job_def("daily_logs_job").get_subset(
        asset_selection={dg.AssetKey("production_traffic"), dg.AssetKey("raw_task_logs")})
    folder = flywheel_home.raw_logs / DAY
    folder.mkdir(parents=True)
    write_jsonl(folder / "real.jsonl", [rec(i, timestamp=f"{DAY}T10:00:00Z", model="real-prod:7") for i in range(5)])
    before = (folder / "real.jsonl").read_bytes()

    ops = {"ops": {"production_traffic": SMALL["production_traffic"]}}
    result = job.execute_in_process(partition_key=DAY, instance=instance, run_config=ops)
    traffic = _meta(result, "production_traffic")
    assert not traffic["written"] and traffic["served_by"] == "none" and "not overwritten" in traffic["reason"]
    assert sorted(p.name for p in folder.iterdir()) == ["real.jsonl"]
    assert (folder / "real.jsonl").read_bytes() == before
    assert _meta(result, "raw_task_logs")["ingested"] == 5
    assert _models(flywheel_home.warehouse, DAY) == {"real-prod:7"}

    fresh = job.execute_in_process(partition_key="2026-12-04", instance=instance, run_config=ops)
    assert _meta(fresh, "production_traffic")["served_by"] == "simulated-prod"  # no champion yet: labelled simulator
    assert _models(flywheel_home.warehouse, "2026-12-04") == {"simulated-prod:v1"}


def test_a_day_without_logs_is_a_skip_not_a_failure(flywheel_home, tmp_path):
    """With the logs in the user's storage and none there for the day, nothing is written to it, the run
    succeeds, raw_task_logs says why it skipped, and the assets after it skip (a failed run would show them
    all as Failed in the catalog)."""
    from flywheel_dagster.assets import logs, mining, orchestration, traffic, verifiers
    from flywheel_dagster.resources.defaults import default_resources
    from flywheel_dagster.resources.storage import StorageResource

    user = tmp_path / "bucket"
    storage = StorageResource(home=str(flywheel_home.home), raw_logs_uri=f"{user}/{{date}}/")
    defs = dg.Definitions(assets=[*traffic.ASSETS, *logs.ASSETS, *mining.ASSETS, *verifiers.ASSETS],
                          jobs=[orchestration.daily_logs_job], resources={**default_resources(), "storage": storage})
    instance = dg.DagsterInstance.ephemeral()
    result = defs.resolve_job_def("daily_logs_job").execute_in_process(partition_key=DAY, instance=instance,
                                                                       run_config={"ops": SMALL})
    assert result.success and not user.exists() and not (flywheel_home.raw_logs / DAY).exists()
    traffic_meta = _meta(result, "production_traffic")
    assert not traffic_meta["written"] and "your storage" in traffic_meta["reason"]
    assert _materialized(result) == {"production_traffic"}
    [obs] = result.asset_observations_for_node("raw_task_logs")
    assert f"no raw logs for {DAY}" in obs.metadata["skipped"].value
    skipped = {e.step_key for e in result.all_events if e.event_type == dg.DagsterEventType.STEP_SKIPPED}
    assert skipped == {"task_logs", "failure_cases", "task_pool", "verifiers"}
    # the run succeeded, but with nothing new the model side is not chained (no retraining on the same pool)
    run = instance.get_run_by_id(result.run_id)
    tick = orchestration.chain_base_model_job(dg.build_run_status_sensor_context(
        sensor_name="chain_base_model_job", dagster_instance=instance, dagster_run=run,
        dagster_event=dg.DagsterEvent(event_type_value="PIPELINE_SUCCESS", job_name="daily_logs_job"),
        resources={"storage": storage}))
    assert isinstance(tick, dg.SkipReason) and "no raw logs" in tick.skip_message


def test_lineage_has_the_edge_and_the_job_starts_with_traffic():
    """production_traffic -> raw_task_logs is a graph edge; deployed_model -> production_traffic (the cycle the
    graph cannot hold) is the champion the asset links in its metadata."""
    from flywheel_dagster.assets.definitions import defs
    from flywheel_dagster.assets.orchestration import DAILY_ASSETS

    graph = defs.resolve_asset_graph()
    node = graph.get(dg.AssetKey("production_traffic"))
    assert graph.get(dg.AssetKey("raw_task_logs")).parent_keys == {node.key}
    assert node.partitions_def == graph.get(dg.AssetKey("raw_task_logs")).partitions_def
    link = node.metadata["champion_from"]
    assert link == dg.MetadataValue.asset(dg.AssetKey("deployed_model"))  # a link in the UI
    assert link.value in graph.get_all_asset_keys() and "champion" in node.description
    assert DAILY_ASSETS[0] == "production_traffic"
    daily = defs.resolve_job_def("daily_logs_job")
    assert node.key in daily.asset_layer.selected_asset_keys
