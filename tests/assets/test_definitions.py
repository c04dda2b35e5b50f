"""The whole Definitions load, and hold every stage module's assets, checks, jobs, schedules and sensors:
a broken import anywhere in assets/ or resources/, or a stage module left out of the list, fails here."""

from __future__ import annotations

import importlib
import pkgutil

import flywheel_dagster.assets as assets

EXPORTS = ("ASSETS", "CHECKS", "JOBS", "SCHEDULES", "SENSORS")
FLYWHEEL_ASSETS = {"production_traffic", "raw_task_logs", "task_logs", "failure_cases", "task_pool", "verifiers", "base_model",
                   "rlvr_policy", "eval_report", "deployed_model", "canary", "flywheel_history"}


def _keys(defs_: list) -> set[str]:
    return {k.to_user_string() for a in defs_ for k in a.keys}


def test_definitions_load():
    from flywheel_dagster.assets.definitions import STAGE_MODULES, build_definitions

    defs = build_definitions()
    assert "gpu" in defs.resources
    # every module under assets/ that exports definitions is a stage module, and only those are
    exporting = {m.name for m in pkgutil.iter_modules(assets.__path__)
                 if any(hasattr(importlib.import_module(f"flywheel_dagster.assets.{m.name}"), e) for e in EXPORTS)}
    assert {m.__name__.removeprefix("flywheel_dagster.assets.") for m in STAGE_MODULES} == exporting
    # each stage module's assets and checks are in the Definitions' graph
    graph = defs.resolve_asset_graph()
    asset_keys = {k.to_user_string() for k in graph.get_all_asset_keys()}
    check_keys = {(k.asset_key.to_user_string(), k.name) for k in graph.asset_check_keys}
    for m in STAGE_MODULES:
        assert _keys(getattr(m, "ASSETS", [])) <= asset_keys, m.__name__
        stage_checks = {(k.asset_key.to_user_string(), k.name) for c in getattr(m, "CHECKS", []) for k in c.check_keys}
        assert stage_checks <= check_keys, m.__name__
    assert asset_keys == FLYWHEEL_ASSETS
    assert len(check_keys) >= sum(len(getattr(m, "CHECKS", [])) for m in STAGE_MODULES) > 0
    # the jobs, schedule and sensors the orchestration stage declares, by name
    assert defs.resolve_job_def("daily_logs_job").name == "daily_logs_job"
    assert defs.resolve_job_def("base_model_job").name == "base_model_job"
    assert defs.resolve_schedule_def("daily_turn_schedule").job_name == "daily_logs_job"
    assert {defs.resolve_sensor_def(n).name for n in ("base_model_release_sensor", "chain_base_model_job")} == {
        "base_model_release_sensor", "chain_base_model_job"}
