"""One flywheel turn from the command line: both jobs of the graph, production traffic first.

`flywheel turn` (what `make flywheel` runs) calls `run_turn`. It executes the same jobs the
schedule and sensors run (`daily_logs_job`, whose first asset `production_traffic` has the champion
serve the day, then `base_model_job`) against the Dagster
instance in `$DAGSTER_HOME` (default `$FLYWHEEL_HOME/dagster`), so every turn shows up in the
UI's asset lineage.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import replace
from datetime import date as Date
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import dagster as dg

from flywheel.paths import FlywheelPaths
from flywheel_dagster.assets.orchestration import BASE_MODEL_ASSETS, DAILY_ASSETS, TURN_TAG
from flywheel_dagster.assets.overrides import check_overrides, resource_config
from flywheel_dagster.assets.partitions import base_models
from flywheel_dagster.assets.turn_config import TurnConfig

TURN_SIZES: dict[str, dict[str, Any]] = {"verifiers": {"max_tasks": 300}}
"""A turn on the embedded defaults is sized for one laptop: verifiers for 300 pool tasks, split across domains
by the run's domain weights (math 240, code 30, agent 30 at 0.8/0.1/0.1), which is every math task of a
3000-record day's pool (161 math tasks there). Measured at the earlier split 270/15/15 on 2 shared cores
(load average 6): 138 s built fresh (code ~2.4 s a task, math and agent ~0.3 s; the 15 more code tasks of
today's split add ~36 s), 14 s on the next turn (the verdict cache). Scheduled runs use the assets' own defaults;
`--set verifiers.max_tasks=0` validates the whole pool."""


def _ops(cfg: TurnConfig, assets: tuple[str, ...], defaults: dict[str, dict[str, Any]]) -> dict[str, Any]:
    ops: dict[str, Any] = {}
    for asset in assets:
        fields = {**defaults.get(asset, {}), **cfg.overrides.get(asset, {})}
        if fields:
            ops[asset] = {"config": fields}
    return ops


def next_day(paths: FlywheelPaths) -> str:
    """The day after the newest `raw_logs/YYYY-MM-DD` folder: consecutive turns are consecutive days."""
    days = []
    for p in paths.raw_logs.glob("????-??-??"):
        try:
            days.append(Date.fromisoformat(p.name))
        except ValueError:
            continue
    if not days:
        return datetime.now(timezone.utc).date().isoformat()
    return (max(days) + timedelta(days=1)).isoformat()


class TurnDayError(ValueError):
    """The turn's day is not a daily-logs partition; raised before the turn writes anything."""


def check_turn_day(day: str) -> None:
    """A turn's day must be a daily-logs partition: a valid date from LOG_START_DATE up to today (UTC)."""
    from flywheel_dagster.assets.partitions import LOG_START_DATE

    try:
        d = Date.fromisoformat(day)
    except ValueError:
        raise TurnDayError(f"--day {day!r} is not a date (YYYY-MM-DD)") from None
    today = datetime.now(timezone.utc).date()
    if d > today:
        raise TurnDayError(
            f"the turn's day {day} is after today ({today}, UTC): a day is a partition of production logs and "
            f"the next one opens tomorrow. Pass --day with a past day (from {LOG_START_DATE}) to run another "
            f"turn now, or let the daily schedule run tomorrow's.")
    if d < Date.fromisoformat(LOG_START_DATE):
        raise TurnDayError(f"the turn's day {day} is before the first log partition ({LOG_START_DATE}, "
                         "assets/partitions.py LOG_START_DATE)")


PROJECT_DAGSTER_YAML = Path(__file__).resolve().parents[1] / "dagster.yaml"
"""The project's instance settings (SQLite storage under $DAGSTER_HOME, run queue, GPU pools)."""


def default_dagster_home(paths: FlywheelPaths) -> Path:
    """`$DAGSTER_HOME`, set to `$FLYWHEEL_HOME/dagster` when unset (as the Makefile does), created, with the
    project's dagster.yaml copied in if it has none: a turn run outside `make` shows up in the UI too."""
    home = Path(os.environ.get("DAGSTER_HOME") or paths.home / "dagster").resolve()
    os.environ["DAGSTER_HOME"] = str(home)
    home.mkdir(parents=True, exist_ok=True)
    if not (home / "dagster.yaml").exists() and PROJECT_DAGSTER_YAML.is_file():
        shutil.copy(PROJECT_DAGSTER_YAML, home / "dagster.yaml")
    return home


def turn_instance(paths: FlywheelPaths) -> dg.DagsterInstance:
    """The persistent instance in `$DAGSTER_HOME` (default `$FLYWHEEL_HOME/dagster`, see `default_dagster_home`)."""
    default_dagster_home(paths)
    return dg.DagsterInstance.get()


def _materialization_metadata(result: dg.ExecuteInProcessResult, asset: str) -> dict[str, Any]:
    """The metadata `asset` recorded in this run, as plain values."""
    for mat in result.asset_materializations_for_node(asset):
        return {k: getattr(v, "value", v) for k, v in mat.metadata.items()}
    return {}


def check_failures(*results: dg.ExecuteInProcessResult) -> list[dict[str, Any]]:
    """Every asset check of these runs that did not pass: asset, check, severity (ERROR or WARN)."""
    out = []
    for result in results:
        for e in result.get_asset_check_evaluations():
            if not e.passed:
                out.append({"asset": e.asset_key.to_user_string(), "check": e.check_name,
                            "severity": getattr(e.severity, "value", str(e.severity))})
    return out


def data_side(data: dg.ExecuteInProcessResult, user_logs: bool) -> dict[str, Any]:
    """What the day's data side did: where the logs came from, what ingest kept, what mining pooled."""
    served, raw = _materialization_metadata(data, "production_traffic"), _materialization_metadata(data, "raw_task_logs")
    pool = _materialization_metadata(data, "task_pool")
    counts = pool.get("pool_counts") or {}
    return {
        "logs_from": (f"served by {served.get('served_by')}" if served.get("written")
                      else f"your logs ({served.get('reason', 'found for the day')})"),
        "user_logs_uri": user_logs,
        **{k: raw.get(k) for k in ("lines_read", "ingested", "quarantined", "duplicates", "redactions",
                                   "quarantine_rate")},
        "pool_size": pool.get("dagster/row_count"),
        "pool_by_domain": counts.get("by_domain", {}),
        "pool_model": counts.get("model") or pool.get("model"),
        "pool_models": counts.get("models", []),
        "pool_by_model": counts.get("by_model", {}),
    }


class DataChecksFailed(RuntimeError):
    """A data-side ERROR check failed: the turn stops before training (unless told to go on)."""

    def __init__(self, summary: dict[str, Any]) -> None:
        self.summary = summary
        names = ", ".join(f"{c['asset']}:{c['check']}" for c in summary["checks_failed"] if c["severity"] == "ERROR")
        super().__init__(f"data-side ERROR checks failed ({names}): the turn stopped before training; "
                         "fix the logs, or run with --no-stop-on-failed-checks")


def _run_config(log_level: str, ops: dict[str, Any], resources: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"loggers": {"console": {"config": {"log_level": log_level}}}, "ops": ops,
            **({"resources": resources} if resources else {})}


def run_turn(cfg: TurnConfig, progress=print, log_level: str = "WARNING",
             defs: dg.Definitions | None = None) -> dict[str, Any]:
    """Run one whole turn and return its summary (`eval_before`, `eval_after`, `promoted`, `reason`, …)."""
    from flywheel.registry.candidate import eval_dir, load_candidate_eval
    from flywheel_dagster.assets.definitions import build_definitions

    defs = defs or build_definitions()
    paths = storage_paths(defs)
    day = cfg.day or next_day(paths)
    check_turn_day(day)  # before any data is written
    check_overrides(cfg.overrides, defs)
    instance = turn_instance(paths)
    tags = {TURN_TAG: day}
    user_logs = storage_user_logs(defs, day)
    progress(f"[turn] data side of {day}: " + (f"your logs from {user_logs}" if user_logs else
             f"the champion serves {cfg.records or 'the default number of'} requests (production_traffic)")
             + " -> raw_task_logs -> task_logs -> failure_cases -> task_pool -> verifiers")
    traffic = {"production_traffic": {"seed": cfg.seed, **({"records": cfg.records} if cfg.records else {})}}
    daily_job, model_job = defs.resolve_job_def("daily_logs_job"), defs.resolve_job_def("base_model_job")
    data = daily_job.execute_in_process(
        partition_key=day, instance=instance, tags=tags, raise_on_error=True,
        run_config=_run_config(log_level, _ops(cfg, DAILY_ASSETS, {**TURN_SIZES, **traffic}),
                               resource_config(daily_job, cfg.overrides, defs)))
    summary = {"day": day, "base_model": cfg.base_model, "data": data_side(data, bool(user_logs)),
               "checks_failed": check_failures(data)}
    if cfg.stop_on_failed_checks and any(c["severity"] == "ERROR" for c in summary["checks_failed"]):
        raise DataChecksFailed(summary)
    if cfg.base_model not in instance.get_dynamic_partitions(base_models.name):
        instance.add_dynamic_partitions(base_models.name, [cfg.base_model])
    progress(f"[turn] model side: base_model[{cfg.base_model}] -> rlvr_policy -> eval_report -> deployed_model")
    model = model_job.execute_in_process(
        partition_key=cfg.base_model, instance=instance, tags={**tags, "flywheel/log_partition": day},
        raise_on_error=True, run_config=_run_config(log_level, _ops(
            cfg, BASE_MODEL_ASSETS, {"rlvr_policy": {"time_budget_s": cfg.train_budget_s, "budget_clock": "cpu"}}),
            resource_config(model_job, cfg.overrides, defs)))
    ev = load_candidate_eval(eval_dir(paths, cfg.base_model))
    deployed = _materialization_metadata(model, "deployed_model")
    canary = _materialization_metadata(model, "canary")  # phase 2 decides when the gate made a challenger
    decided = canary if canary.get("decided") else deployed
    served = _materialization_metadata(data, "production_traffic")
    links = turn_links(defs, {"mlflow_training_run": _materialization_metadata(model, "rlvr_policy").get(
        "mlflow_run_id"), "mlflow_eval_run": ev.eval_run_id}, {"dagster_data_run": data.run_id,
                                                              "dagster_model_run": model.run_id})
    progress("[turn] " + "; ".join(f"{k.replace('_', ' ')}: {v}" for k, v in links.items()))
    return {
        **summary,
        "checks_failed": check_failures(data, model),
        "traffic_served_by": served.get("served_by") if served.get("written") else f"none ({served.get('reason')})",
        "ingest": {k: summary["data"].get(k) for k in ("ingested", "quarantined", "duplicates")},
        "task_pool": summary["data"]["pool_size"],
        **ev.summary(),
        "promoted": bool(decided.get("promoted")),
        "reason": decided.get("reason", ""),
        "champion_after": decided.get("champion"),
        "gate": {"passed": bool(deployed.get("challenger")) or bool(deployed.get("promoted")),
                 "reason": deployed.get("reason", "")},
        "canary": canary.get("canary") if canary.get("decided") else None,
        "eval_vs_live": canary.get("eval_vs_live") or [],
        "dagster_runs": [data.run_id, model.run_id],
        "tracking_uri": paths.mlflow_uri,
        "links": links,
    }


def turn_links(defs: dg.Definitions, mlflow_runs: dict[str, str | None], dagster_runs: dict[str, str]) -> dict[str, str]:
    """The turn's MLflow and Dagster runs as UI links, built when the turn is shown from the storage resource's
    addresses (`mlflow_ui_url`, else the tracking server, else `make mlflow`'s; `dagster_ui_url`)."""
    from flywheel.tracking import dagster_run_url, run_links

    storage = defs.resources["storage"].process_config_and_initialize()
    return {**run_links(storage.paths().mlflow_uri, mlflow_runs, storage.mlflow_ui_url),
            **{k: dagster_run_url(storage.dagster_ui_url, v) for k, v in dagster_runs.items()}}


def turn_days(first: str, n: int) -> list[str]:
    """`n` consecutive days from `first`, each checked to be a log partition before any turn runs."""
    if n < 1:
        raise TurnDayError(f"--turns must be >= 1, got {n}")
    check_turn_day(first)  # a clear error for a non-date before it is parsed below
    days = [(Date.fromisoformat(first) + timedelta(days=i)).isoformat() for i in range(n)]
    for d in days[1:]:
        check_turn_day(d)
    return days


FRESH_HOME_DAYS = 3
"""A home without logs starts this many days before today's end (or `--turns N` days, if more), so `make flywheel`
then two more `flywheel turn` runs walk three consecutive days up to today; a fourth says the next day opens
tomorrow. The demo's traffic is simulated; real logs name their own days."""


def first_day(paths: FlywheelPaths, n: int) -> str:
    """Where `n` consecutive turns start: after the newest log day, or with none yet, `max(n, FRESH_HOME_DAYS) - 1`
    days before today."""
    if any(paths.raw_logs.glob("????-??-??")):
        return next_day(paths)
    return (datetime.now(timezone.utc).date() - timedelta(days=max(n, FRESH_HOME_DAYS) - 1)).isoformat()


def run_turns(cfg: TurnConfig, n: int, progress=print, log_level: str = "WARNING") -> list[dict[str, Any]]:
    """`n` turns on consecutive days (every day checked first); each turn's summary, in order."""
    from flywheel_dagster.assets.definitions import build_definitions

    defs = build_definitions()
    check_overrides(cfg.overrides, defs)  # every override and every day, before any turn writes anything
    days = turn_days(cfg.day or first_day(storage_paths(defs), n), n)
    out = []
    for i, day in enumerate(days, 1):
        if n > 1:
            progress(f"[turn {i}/{n}]")
        out.append(run_turn(replace(cfg, day=day), progress=progress, log_level=log_level, defs=defs))
    return out


def storage_user_logs(defs: dg.Definitions, day: str) -> str:
    """Where the day's logs come from when they are the user's (the storage resource's `raw_logs_uri`, or files
    already in the day's raw-log folder); "" when the champion will serve the day."""
    storage = defs.resources["storage"].process_config_and_initialize()
    if storage.raw_logs_uri:
        return storage.raw_logs_for(day)
    folder = storage.paths().raw_logs / day
    return str(folder) if folder.is_dir() and any(folder.iterdir()) else ""


def storage_paths(defs: dg.Definitions) -> FlywheelPaths:
    """Where the Definitions' jobs read and write (the storage resource, its EnvVar fields resolved as in a run)."""
    return defs.resources["storage"].process_config_and_initialize().paths()
