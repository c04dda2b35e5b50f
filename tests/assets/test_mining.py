"""The mining assets materialize on a real DuckDB warehouse; their checks pass and fail when they should."""

from __future__ import annotations

import dagster as dg
import duckdb
import pytest

from flywheel.mining import MiningConfig
from flywheel_dagster.assets.mining import ASSETS, CHECKS, MiningRunConfig, failure_cases, task_pool
from flywheel_dagster.resources.storage import StorageResource


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    """Two simulated days ingested by the real ingest into a warehouse file."""
    from flywheel.logs.ingest import ingest
    from flywheel.world.traffic import simulate_days

    root = tmp_path_factory.mktemp("mining_assets")
    wh = root / "warehouse.duckdb"
    for folder in simulate_days(root / "raw_logs", "2026-12-01", 2, 800, seed=5):
        ingest(folder, wh, log_date=folder.name)
    return wh


def _materialize(wh, selection=None, run_config=None):
    return dg.materialize([*ASSETS, *CHECKS], selection=selection, resources={"storage": StorageResource(
        home=str(wh.parent))}, run_config=run_config, raise_on_error=False)


def test_config_converts_to_library_config():
    assert MiningRunConfig().to_lib() == MiningConfig()
    cfg = MiningRunConfig(model="m:v2", domains=["math"], decontam_threshold=0.7).to_lib()
    assert cfg.model == "m:v2" and cfg.domains == ("math",) and cfg.decontam_threshold == 0.7


def test_materialize_mining_assets(warehouse):
    res = _materialize(warehouse)
    assert res.success
    mats = {m.asset_key.to_user_string(): m for m in res.get_asset_materialization_events()}
    assert set(mats) == {"failure_cases", "task_pool"}
    fmeta = mats["failure_cases"].materialization.metadata
    assert fmeta["dagster/row_count"].value > 300
    table = fmeta["failures_by_domain_and_type"].value
    assert "| domain | pass rate | wrong_answer |" in table and "| agent |" in table
    pmeta = mats["task_pool"].materialization.metadata
    assert pmeta["dagster/row_count"].value > 50 and pmeta["decontaminated"].value >= 1
    assert "| math |" in pmeta["pool_by_domain"].value
    assert pmeta["log_partitions"].value == ["2026-12-01", "2026-12-02"]  # the days the pool's records came from
    checks = {e.asset_check_key.name: e.passed for e in res.get_asset_check_evaluations()}
    assert checks == {"task_pool_covers_domains": True, "task_pool_decontaminated": True}
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        n_pool = con.execute("SELECT count(*) FROM task_pool").fetchall()[0][0]
        cols = [r[0] for r in con.execute("DESCRIBE task_pool").fetchall()]
    finally:
        con.close()
    assert n_pool == pmeta["dagster/row_count"].value
    assert cols == ["task_id", "domain", "prompt", "reference", "failed_response", "attempts", "passes",
                    "pass_rate", "difficulty", "reason", "rank"]


def test_checks_fail_on_a_contaminated_or_lopsided_pool(warehouse):
    assert _materialize(warehouse).success
    con = duckdb.connect(str(warehouse))
    try:  # smuggle a held-out prompt into the pool, and lose every agent task
        from flywheel.tasks.suites import heldout_suite

        leak = heldout_suite("math")[0]
        con.execute("""INSERT INTO task_pool (task_id, domain, prompt, reference, attempts, passes, pass_rate,
                       difficulty, reason, rank) VALUES (?, 'math', ?, '{}', 3, 1, 0.33, 0.6, 'frontier', 9999)""",
                    [leak.task_id, leak.prompt])
        con.execute("DELETE FROM task_pool WHERE domain = 'agent'")
    finally:
        con.close()
    res = _materialize(warehouse, selection=dg.AssetSelection.checks(*CHECKS))
    checks = {e.asset_check_key.name: e for e in res.get_asset_check_evaluations()}
    assert not checks["task_pool_decontaminated"].passed
    assert checks["task_pool_decontaminated"].metadata["contaminated_in_pool"].value == 1
    assert not checks["task_pool_covers_domains"].passed
    assert checks["task_pool_covers_domains"].metadata["domains_missing"].value == "agent"


def test_assets_are_grouped_and_owned():
    for a in (failure_cases, task_pool):
        spec = next(iter(a.specs))
        assert spec.group_name == "mining" and spec.owners and spec.description
    assert dg.AssetKey("task_logs") in {d.asset_key for d in next(iter(failure_cases.specs)).deps}
