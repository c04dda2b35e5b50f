"""Failure mining: pass rates, failure taxonomy, difficulty history and the task pool, in DuckDB SQL.

    from flywheel.mining import MiningConfig, mine, load_task_pool
    failures, pool = mine(con, MiningConfig())          # con: the warehouse with `task_logs`
    tasks = load_task_pool(con, domains=["math"], limit=64)
"""

from __future__ import annotations

import duckdb

from flywheel.mining.config import MiningConfig
from flywheel.mining.failures import FailureReport, mine_failures
from flywheel.mining.pool import (
    TASK_POOL_COLUMNS,
    PoolReport,
    build_task_pool,
    heldout_prompts,
    load_task_pool,
)
from flywheel.mining.taxonomy import FAILURE_TYPES, classify, normalize_traceback


def mine(con: duckdb.DuckDBPyConnection, config: MiningConfig | None = None,
         heldout: list[tuple[str, str, str]] | None = None) -> tuple[FailureReport, PoolReport]:
    """Both stages: `mine_failures` then `build_task_pool`."""
    cfg = config or MiningConfig()
    return mine_failures(con, cfg), build_task_pool(con, cfg, heldout)


__all__ = [
    "FAILURE_TYPES", "TASK_POOL_COLUMNS", "FailureReport", "MiningConfig", "PoolReport", "build_task_pool",
    "classify", "heldout_prompts", "load_task_pool", "mine", "mine_failures", "normalize_traceback",
]
