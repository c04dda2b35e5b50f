"""The readers: a training run's metrics back from MLflow under the trainer's names, and per-day facts of the
warehouse after a real ingest."""

from __future__ import annotations

import pytest

from flywheel.monitoring.sources import LiveCounts, ingest_days, live_counts, run_history


def test_run_history_reads_what_the_trainer_logged(flywheel_home, seed_mlflow_db):
    from flywheel.train.common.telemetry import Telemetry

    seed_mlflow_db(flywheel_home)
    tele = Telemetry(flywheel_home.mlflow_uri, artifact_root=flywheel_home.mlflow_artifacts)
    run_id = tele.start("rl", {"steps": 2})
    tele.log_metrics(1, {"reward/mean": 0.2, "reward/std": 0.3, "entropy": 1.5, "groups/dropped_share": 0.5})
    tele.log_metrics(2, {"reward/mean": 0.4, "reward/std": 0.0, "entropy": 0.01, "pass_rate": 0.4})
    tele.finish()
    h = run_history(flywheel_home.mlflow_uri, run_id)
    assert [x["step"] for x in h] == [1.0, 2.0]
    assert h[0]["groups/dropped_share"] == 0.5 and h[1]["entropy"] == pytest.approx(0.01)
    assert h[1]["pass_rate"] == pytest.approx(0.4) and "pass_rate" not in h[0]


def test_ingest_days_and_live_counts_after_a_real_ingest(flywheel_home, rec, write_jsonl):
    from flywheel.logs.ingest import ingest
    from flywheel.warehouse import connect

    con = connect(flywheel_home.warehouse)
    for day, model in (("2026-12-01", "m:1"), ("2026-12-02", "m:2")):
        folder = flywheel_home.raw_logs / day
        folder.mkdir(parents=True)
        write_jsonl(folder / "a.jsonl", [rec(f"{day}-{i}", model=model, timestamp=f"{day}T09:00:00Z",
                                             outcome={"passed": i % 4 == 0}) for i in range(40)] + ["{bad"] * 2)
        ingest(str(folder), con, log_date=day)
    days = ingest_days(con)
    assert [(d.day, d.rows, d.quarantined) for d in days] == [("2026-12-01", 40, 2), ("2026-12-02", 40, 2)]
    assert days[0].quarantine_rate == pytest.approx(2 / 42)
    assert live_counts(con, "m:2") == [LiveCounts("2026-12-02", "math", 40, 10)]
    assert live_counts(con, "m:1", since="2026-12-02") == []
    con.close()
