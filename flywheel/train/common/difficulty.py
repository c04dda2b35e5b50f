"""The trainer's side of the warehouse's `difficulty_history`: read priors, write back what a run saw.

A run samples each task many times; those attempts and passes are the freshest difficulty
signal there is. `record_difficulty` upserts them, one row per (task, model, day) under the
training policy's own model name (`training_model_name`), so mining (which replaces only the
(model, day) pairs of served models in `task_logs`) never deletes them, and the next pool's
difficulty prior (`flywheel.mining.pool`, rows of models other than the served one) and the
next run's scheduler (`history_pass_rates`) start from them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from pathlib import Path

import duckdb
import pyarrow as pa

from flywheel.warehouse import connect

TRAINING_SUFFIX = "/rlvr-train"


def training_model_name(release: str) -> str:
    """The `model` of a training run's rows: the policy in training from base model `release`."""
    return f"{release}{TRAINING_SUFFIX}"


def record_difficulty(
    warehouse: Path, counts: Mapping[str, tuple[str, int, int]], model: str, log_date: dt.date | str
) -> int:
    """Upsert `counts` (task_id -> (domain, attempts, passes)) as `model`'s rows of `log_date`; returns
    the rows written. A re-run of the same (model, day) replaces its rows instead of adding to them."""
    rows = [(t, d, int(a), int(p)) for t, (d, a, p) in sorted(counts.items()) if a > 0]
    if not rows:
        return 0
    day = dt.date.fromisoformat(log_date) if isinstance(log_date, str) else log_date
    con = connect(warehouse)  # difficulty_history exists on every writable connection
    try:
        con.register("_train_counts", pa.table({
            "task_id": [r[0] for r in rows], "domain": [r[1] for r in rows],
            "attempts": pa.array([r[2] for r in rows], pa.int64()), "passes": pa.array([r[3] for r in rows], pa.int64()),
        }))
        con.execute("BEGIN TRANSACTION")
        try:
            params = {"model": model, "day": day}
            con.execute("""DELETE FROM difficulty_history WHERE model = $model AND log_date = $day
                           AND task_id IN (SELECT task_id FROM _train_counts)""", params)
            con.execute("""INSERT INTO difficulty_history SELECT task_id, domain, $model, $day, attempts, passes,
                           now()::TIMESTAMP FROM _train_counts""", params)
            con.execute("COMMIT")
        except Exception:
            con.execute("ROLLBACK")
            raise
    finally:
        con.close()
    return len(rows)


def _has_history(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the warehouse has a `difficulty_history` table yet (a fresh one has none)."""
    return bool(con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'difficulty_history'")
                .fetchone()[0])


def history_pass_rates(con: duckdb.DuckDBPyConnection, task_ids: Iterable[str]) -> dict[str, float]:
    """task_id -> Laplace-smoothed pass rate over every model's history rows, for the tasks that have any."""
    ids = sorted(set(task_ids))
    if not ids or not _has_history(con):
        return {}
    rows = con.execute("""
        SELECT task_id, (sum(passes) + 1.0) / (sum(attempts) + 2.0) FROM difficulty_history
        WHERE list_contains($ids, task_id) AND attempts > 0 GROUP BY task_id
    """, {"ids": ids}).fetchall()
    return {t: float(p) for t, p in rows}


def training_attempts(con: duckdb.DuckDBPyConnection, before: dt.date | str | None = None) -> dict[str, int]:
    """task_id -> attempts training runs (any release) wrote back for days before `before` (None: every
    day): what replay rotates past. A re-run of a day ignores that day's own rows, so it picks the same tasks."""
    if not _has_history(con):
        return {}
    day = dt.date.fromisoformat(before) if isinstance(before, str) else before
    rows = con.execute(f"""SELECT task_id, sum(attempts) FROM difficulty_history
                           WHERE model LIKE '%{TRAINING_SUFFIX}' AND ($day IS NULL OR log_date < $day)
                           GROUP BY task_id""", {"day": day}).fetchall()
    return {t: int(a) for t, a in rows}
