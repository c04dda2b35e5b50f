"""raw_task_logs / task_logs with the real storage resource (DuckDB warehouse) and dagster.materialize(); checks fail when they should."""

from __future__ import annotations

import json

import dagster as dg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from flywheel_dagster.assets.logs import CHECKS, raw_task_logs, task_logs
from flywheel_dagster.resources.storage import StorageResource

DAY = "2026-12-01"


def line(i: int, domain: str = "math", **kw) -> str:
    r = {"id": f"r{i}", "timestamp": f"{DAY}T10:00:00Z", "task_id": f"t{i % 3}", "domain": domain,
         "model": "tiny:v1", "messages": [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}],
         "outcome": {"status": "success", "passed": i % 2 == 0}}
    r.update(kw)
    return json.dumps(r)


def write_day(root, lines: list[str], day: str = DAY) -> None:
    d = root / day
    d.mkdir(parents=True, exist_ok=True)
    (d / "traffic.jsonl").write_text("\n".join(lines) + "\n")


def resources(home, template: str = "") -> dict:
    return {"storage": StorageResource(home=str(home), raw_logs_uri=template)}


def run(home, template: str = "", day: str = DAY, run_config: dict | None = None):
    """One run: the day's raw_task_logs partition, then task_logs and its checks."""
    r = dg.materialize([raw_task_logs, task_logs, *CHECKS], partition_key=day, resources=resources(home, template),
                       run_config=run_config)
    checks = {e.check_name: e for e in r.get_asset_check_evaluations()}
    return r, r, checks


def test_clean_day_materializes_and_checks_pass(flywheel_home):
    write_day(flywheel_home.raw_logs, [line(i) for i in range(20)] + [line(3)])
    r1, r2, checks = run(flywheel_home.home)
    assert r1.success and r2.success
    (m1,) = r1.asset_materializations_for_node("raw_task_logs")
    assert m1.partition == DAY
    md = {k: getattr(v, "value", v) for k, v in m1.metadata.items()}
    assert (md["lines_read"], md["ingested"], md["quarantined"], md["duplicates"]) == (21, 20, 0, 1)
    (m2,) = r2.asset_materializations_for_node("task_logs")
    md2 = {k: getattr(v, "value", v) for k, v in m2.metadata.items()}
    assert md2["rows"] == 20 and md2["tasks"] == 3 and "| math | 20 | 3 | 50.0% |" in md2["by_domain"]
    assert set(checks) == {"task_logs_no_null_task_id", "task_logs_known_domains", "task_logs_quarantine_rate"}
    assert all(c.passed for c in checks.values())
    # the same partition again adds nothing
    r3 = dg.materialize([raw_task_logs], partition_key=DAY, resources=resources(flywheel_home.home))
    (m3,) = r3.asset_materializations_for_node("raw_task_logs")
    assert m3.metadata["ingested"].value == 0 and m3.metadata["duplicates"].value == 21


def test_high_quarantine_rate_fails_the_check_and_threshold_is_configurable(flywheel_home):
    write_day(flywheel_home.raw_logs, [line(i) for i in range(8)] + ["{truncated", line(99, timestamp=12)])
    r1, _, checks = run(flywheel_home.home)
    (m1,) = r1.asset_materializations_for_node("raw_task_logs")
    assert "| invalid_json | 1 |" in m1.metadata["quarantine_by_reason"].value
    q = checks["task_logs_quarantine_rate"]
    assert not q.passed and q.metadata["quarantine_rate"].value == pytest.approx(0.2)
    assert checks["task_logs_known_domains"].passed and checks["task_logs_no_null_task_id"].passed
    cfg = {"ops": {"task_logs_task_logs_quarantine_rate": {"config": {"max_quarantine_rate": 0.25}}}}
    _, _, checks = run(flywheel_home.home, run_config=cfg)
    assert checks["task_logs_quarantine_rate"].passed


def test_unknown_domain_is_kept_and_flagged(flywheel_home):
    write_day(flywheel_home.raw_logs, [line(i) for i in range(5)] + [line(7, domain="sql"), line(8, domain="sql")])
    r1, _, checks = run(flywheel_home.home)
    assert r1.asset_materializations_for_node("raw_task_logs")[0].metadata["ingested"].value == 7
    c = checks["task_logs_known_domains"]
    assert not c.passed and c.severity == dg.AssetCheckSeverity.WARN
    assert c.metadata["unknown_domain_rows"].value == 2 and "| sql | 2 |" in c.metadata["unknown_domains"].value


def test_null_task_id_from_another_writer_fails_the_check(flywheel_home):
    from flywheel.warehouse import connect
    from flywheel.warehouse.tables import TASK_LOGS_ARROW, task_logs_dir

    write_day(flywheel_home.raw_logs, [line(1)])
    con = connect(flywheel_home.warehouse)
    folder = task_logs_dir(con)
    con.close()
    row = {f.name: None for f in TASK_LOGS_ARROW}
    row.update(id="foreign", domain="math", log_date=pa.scalar(0, pa.date32()).as_py())
    (folder / DAY).mkdir(parents=True, exist_ok=True)
    schema = pa.schema([f.with_nullable(True) for f in TASK_LOGS_ARROW])
    pq.write_table(pa.Table.from_pylist([row], schema=schema), folder / DAY / "foreign.parquet")
    _, _, checks = run(flywheel_home.home)
    c = checks["task_logs_no_null_task_id"]
    assert not c.passed and c.metadata["rows_without_task_id"].value == 1


def test_uri_template_and_missing_day(flywheel_home, tmp_path):
    logs = tmp_path / "bucket" / "logs"
    write_day(logs, [line(i) for i in range(3)], day="2026-12-02")
    r1 = dg.materialize([raw_task_logs], partition_key="2026-12-02",
                        resources=resources(flywheel_home.home, f"file://{logs}/{{date}}"))
    assert r1.asset_materializations_for_node("raw_task_logs")[0].metadata["ingested"].value == 3
    from flywheel.warehouse import connect

    con = connect(flywheel_home.warehouse)
    assert con.execute("SELECT DISTINCT log_date::VARCHAR FROM task_logs").fetchall() == [("2026-12-02",)]
    con.close()
    _assert_skipped(dg.materialize([raw_task_logs], partition_key="2026-11-15",
                                   resources=resources(flywheel_home.home, f"file://{logs}/{{date}}")), "2026-11-15")


def _assert_skipped(result, day: str) -> None:
    """A day without logs is a skip (the run succeeds, nothing materialized, an observation says why), not a
    failure: the UI would otherwise show every asset after it as Failed."""
    assert result.success and not result.asset_materializations_for_node("raw_task_logs")
    [obs] = result.asset_observations_for_node("raw_task_logs")
    assert obs.partition == day and f"no raw logs for {day}" in obs.metadata["skipped"].value


def test_daily_asset_reads_its_partition_from_s3(s3, flywheel_home):
    s3.put("logs/2026-12-02/traffic.jsonl", ("\n".join(line(i) for i in range(3)) + "\n{oops\n").encode())
    res = resources(flywheel_home.home, f"s3://logs/{{date}}/?{s3.query}")
    meta = dg.materialize([raw_task_logs], partition_key="2026-12-02", resources=res) \
        .asset_materializations_for_node("raw_task_logs")[0].metadata
    assert (meta["ingested"].value, meta["quarantined"].value) == (3, 1)
    _assert_skipped(dg.materialize([raw_task_logs], partition_key="2026-12-03", resources=res), "2026-12-03")


def test_the_export_format_is_run_config(flywheel_home):
    """An OpenAI Chat Completions export ingests as it is; forcing another format quarantines it, per line."""
    from pathlib import Path

    fixture = Path(__file__).parents[1] / "logs" / "fixtures" / "openai_chat.jsonl"
    lines = [ln for ln in fixture.read_text().splitlines() if ln.strip()]
    write_day(flywheel_home.raw_logs, lines)

    def ingested(fmt: str) -> dict:
        r = dg.materialize([raw_task_logs], partition_key=DAY, resources=resources(flywheel_home.home),
                           run_config={"ops": {"raw_task_logs": {"config": {"format": fmt}}}})
        (m,) = r.asset_materializations_for_node("raw_task_logs")
        return {k: getattr(v, "value", v) for k, v in m.metadata.items()}

    as_openai = ingested("openai")
    assert as_openai["ingested"] > 0 and as_openai["ingested"] + as_openai["quarantined"] + \
        as_openai["duplicates"] == len(lines)
    as_sharegpt = ingested("sharegpt")
    assert as_sharegpt["ingested"] == 0 and as_sharegpt["quarantined"] == len(lines)


def test_a_bad_day_fails_the_check_while_the_all_days_rate_is_low(flywheel_home):
    """Judged per day: 9 clean days of 100 lines, then a day with 12 of 100 lines broken (1.2% over all days)."""
    days = [f"2026-11-{d:02d}" for d in range(20, 30)]
    for n, day in enumerate(days):
        bad = 12 if day == days[-1] else 0
        write_day(flywheel_home.raw_logs, [line(1000 * n + i, timestamp=f"{day}T10:00:00Z", id=f"{day}-{i}")
                                           for i in range(100 - bad)] + ["{cut"] * bad, day=day)
    for day in days[:-1]:
        _, _, checks = run(flywheel_home.home, day=day)
        assert checks["task_logs_quarantine_rate"].passed
    _, _, checks = run(flywheel_home.home, day=days[-1])
    q = checks["task_logs_quarantine_rate"]
    assert not q.passed and q.metadata["day"].value == days[-1]
    assert q.metadata["quarantine_rate"].value == pytest.approx(0.12)
    assert q.metadata["all_days_rate"].value < 0.05
    assert "traffic.jsonl" in q.metadata["worst_files"].value
