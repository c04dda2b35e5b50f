"""Where the signals' numbers come from: the training run's MLflow metrics and the warehouse's tables.

Readers only: each takes a location (an MLflow URI and run id) or an open warehouse connection and returns
plain values for `flywheel.monitoring.signals` and `flywheel.monitoring.sequential`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import duckdb

from flywheel.mining.taxonomy import SQL_PASSED
from flywheel.monitoring.sequential import LiveCounts

TRAINING_KEYS = ("reward/mean", "reward/std", "pass_rate", "entropy", "groups/dropped_share",
                 "samples/finished_share")
"""The trainer's metric names the training signals read."""


def run_history(tracking_uri: str, run_id: str, keys: Sequence[str] = TRAINING_KEYS) -> list[dict[str, float]]:
    """A training run's per-step metrics as the trainer named them (`TrainResult.history`'s shape), read back
    from its MLflow run: what the run logged is what is judged, whichever process judges it."""
    from mlflow import MlflowClient  # heavy: mlflow

    from flywheel.train.common.telemetry import mlflow_key

    client = MlflowClient(tracking_uri=tracking_uri)
    steps: dict[int, dict[str, float]] = {}
    for key in keys:
        for m in client.get_metric_history(run_id, mlflow_key(key)):
            steps.setdefault(int(m.step), {"step": float(m.step)})[key] = float(m.value)
    return [steps[s] for s in sorted(steps)]


def _tables(con: duckdb.DuckDBPyConnection) -> set[str]:
    return {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}


def verifier_reasons(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The reason of every verifier the last `verifiers` run validated (`valid` or why not)."""
    if "verifiers" not in _tables(con):
        return []
    return [r[0] or "" for r in con.execute("SELECT reason FROM verifiers").fetchall()]


@dataclass(frozen=True)
class IngestDay:
    """One log day as ingest left it: clean rows, quarantined lines, redactions."""

    day: str
    rows: int
    quarantined: int
    redactions: int

    @property
    def quarantine_rate(self) -> float:
        total = self.rows + self.quarantined
        return self.quarantined / total if total else 0.0

    @property
    def redactions_per_row(self) -> float:
        return self.redactions / self.rows if self.rows else 0.0


def ingest_days(con: duckdb.DuckDBPyConnection) -> list[IngestDay]:
    """Every log day in the warehouse, oldest first."""
    rows = con.execute("""
        WITH c AS (SELECT log_date AS d, count(*) AS n, coalesce(sum(redactions), 0) AS r FROM task_logs GROUP BY 1),
             q AS (SELECT log_date AS d, count(*) AS n FROM quarantine GROUP BY 1)
        SELECT strftime(coalesce(c.d, q.d), '%Y-%m-%d'), coalesce(c.n, 0), coalesce(q.n, 0), coalesce(c.r, 0)
        FROM c FULL OUTER JOIN q ON c.d = q.d WHERE coalesce(c.d, q.d) IS NOT NULL ORDER BY 1""").fetchall()
    return [IngestDay(d, int(n), int(q), int(r)) for d, n, q, r in rows]


def live_counts(con: duckdb.DuckDBPyConnection, model: str, since: str | None = None) -> list[LiveCounts]:
    """What `model` (the `name:version` the log lines carry) did in production per day and domain, from
    `task_logs`, judged lines only; days from `since` (YYYY-MM-DD) on when given."""
    where, params = "model = ?", [model]
    if since:
        where += " AND log_date >= ?::DATE"
        params.append(since)
    rows = con.execute(f"""
        SELECT strftime(log_date, '%Y-%m-%d') AS day, domain, count(p) AS n, count(*) FILTER (WHERE p) AS passes
        FROM (SELECT log_date, domain, {SQL_PASSED.format(o='outcome')} AS p FROM task_logs WHERE {where})
        WHERE p IS NOT NULL GROUP BY 1, 2 ORDER BY 1, 2""", params).fetchall()
    return [LiveCounts(d, dom, int(n), int(k)) for d, dom, n, k in rows]
