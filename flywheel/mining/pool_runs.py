"""What the task pool was built from: the record of each pool build (`task_pool_runs`), the coverage check's
counts and the log partitions behind the pool (the lineage of every policy trained on it)."""

from __future__ import annotations

import json
from typing import Any

import duckdb

from flywheel.logs.schema import KNOWN_DOMAINS
from flywheel.mining.config import MiningConfig
from flywheel.warehouse.tables import TASK_POOL_RUNS_DDL


def record_pool_run(con: duckdb.DuckDBPyConnection, model: str | None, config: dict[str, Any],
                    report: dict[str, Any]) -> None:
    """One row per `build_task_pool` call: the model (and in the report, every model) it mined, its config."""
    con.execute(TASK_POOL_RUNS_DDL)
    con.execute("INSERT INTO task_pool_runs VALUES (now()::TIMESTAMP, ?, ?, ?)",
                [model, json.dumps(config), json.dumps(report)]).fetchall()


def last_pool_run(con: duckdb.DuckDBPyConnection) -> tuple[str | None, MiningConfig] | None:
    """(model, config) of the latest `build_task_pool` call, or None before the first one."""
    con.execute(TASK_POOL_RUNS_DDL)
    rows = con.execute("SELECT model, config FROM task_pool_runs ORDER BY built_at DESC LIMIT 1").fetchall()
    if not rows:
        return None
    cfg = json.loads(rows[0][1])
    cfg["domains"] = tuple(cfg["domains"]) if cfg.get("domains") is not None else None
    return rows[0][0], MiningConfig(**cfg)


def last_pool_models(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The models the latest pool was mined from ([] before the first pool)."""
    con.execute(TASK_POOL_RUNS_DDL)
    rows = con.execute("SELECT model, report FROM task_pool_runs ORDER BY built_at DESC LIMIT 1").fetchall()
    if not rows:
        return []
    report = json.loads(rows[0][1] or "{}")
    return list(report.get("models") or ([rows[0][0]] if rows[0][0] else []))


def pool_coverage(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[int, int]]:
    """domain -> (tasks the pool's models failed at least once, tasks in the pool), for verifiable domains."""

    last = last_pool_run(con)
    models = last_pool_models(con)
    if last is None or not models:
        return {}
    cfg = last[1]
    domains = [d for d in KNOWN_DOMAINS if not cfg.domains or d in cfg.domains]
    rows = con.execute("""
        SELECT s.domain, count(DISTINCT s.task_id) FILTER (WHERE s.passes < s.attempts),
               (SELECT count(*) FROM task_pool p WHERE p.domain = s.domain)
        FROM task_stats s WHERE list_contains($models, s.model) AND list_contains($domains, s.domain)
        GROUP BY s.domain
    """, {"models": models, "domains": domains}).fetchall()
    return {d: (int(f), int(p)) for d, f, p in rows}


def pool_log_partitions(con: duckdb.DuckDBPyConnection, models: list[str] | str | None) -> list[str]:
    """The daily log partitions (`log_date`, YYYY-MM-DD) holding the mined models' records of the pool's tasks:
    the raw data the pool, and every policy trained on it, came from (lineage of a registered model)."""
    models = [models] if isinstance(models, str) else list(models or [])
    if not models:
        return []
    return [r[0] for r in con.execute("""
        SELECT DISTINCT strftime(log_date, '%Y-%m-%d') FROM task_logs
        WHERE list_contains($models, model) AND log_date IS NOT NULL AND task_id IN (SELECT task_id FROM task_pool)
        ORDER BY 1
    """, {"models": models}).fetchall()]
