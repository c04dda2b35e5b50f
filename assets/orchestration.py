"""How turns run without a person: jobs, the daily schedule, and the sensors.

Dagster jobs cannot mix partitions definitions, so one turn is two jobs:
`daily_logs_job` (daily partition: production_traffic -> raw_task_logs -> task_logs -> failure_cases
-> task_pool -> verifiers; the champion serves the day, its logs are mined) and `base_model_job`
(base_model partition: base_model -> rlvr_policy -> eval_report -> deployed_model -> canary). The schedule runs
the daily job for the day that just ended; `chain_base_model_job` starts the base-model job for the
champion's base model when a daily run succeeds (and ingested a day); and `base_model_release_sensor`
adds a partition and backfills the chain for each new base-model checkpoint. The executor comes from
`$FLYWHEEL_EXECUTOR` (see docs/orchestration.md).
"""

import os
from datetime import datetime, timedelta, timezone

import dagster as dg

from flywheel.defaults import DEFAULT_BASE_MODEL
from flywheel_dagster.assets.partitions import base_models, daily_logs
from flywheel_dagster.resources.storage import StorageResource

DAILY_ASSETS = ("production_traffic", "raw_task_logs", "task_logs", "failure_cases", "task_pool", "verifiers")
BASE_MODEL_ASSETS = ("base_model", "rlvr_policy", "eval_report", "deployed_model", "canary", "flywheel_history")
EXECUTOR_ENV = "FLYWHEEL_EXECUTOR"
TURN_TAG = "flywheel/turn"
"""Runs `flywheel turn` starts itself (it runs both jobs); the chaining sensor leaves them alone."""


def executor_from_env() -> dg.ExecutorDefinition:
    """`multiprocess` (default), `in_process`, `k8s` (dagster-k8s) or `docker` (dagster-docker)."""
    kind = os.environ.get(EXECUTOR_ENV, "multiprocess")
    if kind == "multiprocess":
        return dg.multiprocess_executor
    if kind == "in_process":
        return dg.in_process_executor
    if kind == "k8s":
        from dagster_k8s import k8s_job_executor  # pip install dagster-k8s

        return k8s_job_executor
    if kind == "docker":
        from dagster_docker import docker_executor  # pip install dagster-docker

        return docker_executor
    raise ValueError(f"{EXECUTOR_ENV} must be multiprocess, in_process, k8s or docker, got {kind!r}")


daily_logs_job = dg.define_asset_job(
    "daily_logs_job",
    selection=dg.AssetSelection.assets(*DAILY_ASSETS),
    partitions_def=daily_logs,
    executor_def=executor_from_env(),
    description="One day of the flywheel's data side: the champion serves the day's traffic (existing logs win), "
                "ingest that day's logs, mine failures, refresh the task pool and its verifiers. Scheduled "
                "daily; success chains `base_model_job`.",
    tags={"flywheel/stage": "data"},
)

base_model_job = dg.define_asset_job(
    "base_model_job",
    selection=dg.AssetSelection.assets(*BASE_MODEL_ASSETS),
    partitions_def=base_models,
    executor_def=executor_from_env(),
    description="The model side of a turn for one base model: RLVR on the task pool, evaluate against the "
                "champion, register and (maybe) promote. Also the backfill a new base-model release triggers.",
    tags={"flywheel/stage": "model", "flywheel/gpu": "train"},
)

@dg.schedule(
    job=daily_logs_job, cron_schedule="0 2 * * *", execution_timezone="UTC", name="daily_turn_schedule",
    description="02:00 UTC: the day that just ended (yesterday's partition): its production traffic (served by "
                "the champion unless logs exist) through the data side; `chain_base_model_job` does the rest.",
)
def daily_turn_schedule(context: dg.ScheduleEvaluationContext) -> dg.RunRequest:
    # not build_schedule_from_partitioned_job: daily_logs ends one day ahead (end_offset=1, so a turn may run
    # today's partition by hand), and that helper would pick today's barely started day
    now = context.scheduled_execution_time or datetime.now(timezone.utc)
    day = (now.astimezone(timezone.utc) - timedelta(days=1)).date().isoformat()
    return dg.RunRequest(run_key=day, partition_key=day)


def current_base_model(instance: dg.DagsterInstance, tracking_uri: str) -> str:
    """The champion's base model if it is a known partition, else the newest partition, else the default."""
    from flywheel.registry.mlflow_registry import champion_base_model

    known = instance.get_dynamic_partitions(base_models.name)
    champ = champion_base_model(tracking_uri)
    if champ and champ in known:
        return champ
    return known[-1] if known else DEFAULT_BASE_MODEL


def _skipped_ingest(instance: dg.DagsterInstance, run_id: str) -> bool:
    """Whether the run planned `raw_task_logs` but materialized nothing (a day without logs)."""
    def keys(kind: dg.DagsterEventType) -> set[dg.AssetKey]:
        return {r.event_log_entry.dagster_event.asset_key
                for r in instance.get_records_for_run(run_id, of_type=kind, limit=1000).records}

    raw = dg.AssetKey("raw_task_logs")
    return raw in keys(dg.DagsterEventType.ASSET_MATERIALIZATION_PLANNED) and \
        raw not in keys(dg.DagsterEventType.ASSET_MATERIALIZATION)


@dg.run_status_sensor(
    run_status=dg.DagsterRunStatus.SUCCESS, monitored_jobs=[daily_logs_job], request_job=base_model_job,
    name="chain_base_model_job", default_status=dg.DefaultSensorStatus.RUNNING, minimum_interval_seconds=30,
    description="When a day's data run succeeds, train/evaluate/deploy on the champion's base model.",
)
def chain_base_model_job(context: dg.RunStatusSensorContext, storage: StorageResource):
    if TURN_TAG in context.dagster_run.tags:
        return dg.SkipReason("started by `flywheel turn`, which runs base_model_job itself")
    if _skipped_ingest(context.instance, context.dagster_run.run_id):
        return dg.SkipReason("the day had no raw logs (raw_task_logs skipped): nothing new to train on")
    base = current_base_model(context.instance, storage.paths().mlflow_uri)
    day = context.dagster_run.tags.get("dagster/partition", "")
    req = dg.RunRequest(run_key=f"{context.dagster_run.run_id}:{base}", partition_key=base,
                        tags={"flywheel/log_partition": day})
    if base in context.instance.get_dynamic_partitions(base_models.name):
        return req
    return dg.SensorResult(run_requests=[req], dynamic_partitions_requests=[base_models.build_add_request([base])])


@dg.sensor(
    job=base_model_job, name="base_model_release_sensor", minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Watches the base-model releases folder (storage `releases_dir`, default models/base under the "
                "storage home); each new checkpoint folder becomes a `base_model` partition "
                "and a run that backfills base_model -> rlvr_policy -> eval_report -> deployed_model for it.",
)
def base_model_release_sensor(context: dg.SensorEvaluationContext,
                              storage: StorageResource) -> dg.SensorResult | dg.SkipReason:
    from flywheel.registry.releases import discover_releases

    directory = storage.paths().releases
    known = set(context.instance.get_dynamic_partitions(base_models.name))
    new = [r for r in discover_releases(directory) if r not in known]
    if not new:
        return dg.SkipReason(f"no new checkpoint under {directory}")
    return dg.SensorResult(
        run_requests=[dg.RunRequest(run_key=f"base-model-release:{r}", partition_key=r,
                                    tags={"flywheel/trigger": "base_model_release"}) for r in new],
        dynamic_partitions_requests=[base_models.build_add_request(new)],
    )


JOBS = [daily_logs_job, base_model_job]
SCHEDULES = [daily_turn_schedule]
SENSORS = [base_model_release_sensor, chain_base_model_job]
