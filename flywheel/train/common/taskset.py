"""What a run trains on: the mined pool mixed with replay from the train suites, and its dev split.

- pool: the `task_pool` rows whose verifier is valid (`meta["source"] = "pool"`), prior pass rate
  `1 - difficulty` (the pool's Beta posterior, which already folds in `difficulty_history`);
- dev: `dev_split` (below), disjoint from the pool, drawn first so a small suite
  (code has ~120 train tasks) always leaves some for it;
- replay: `replay_tasks_per_domain` tasks of each weighted domain's train suite that are neither in
  the pool nor in the dev split (`meta["source"] = "replay"`; a train suite never holds a held-out
  prompt), those earlier training runs attempted least first (their `difficulty_history` rows), so
  consecutive turns rotate through the suite instead of re-learning one slice; prior pass rate from
  that history where a task has one.

Without a pool (a fresh machine), replay is all there is: `fallback_per_domain` tasks per domain.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from flywheel.mining.pool import load_task_pool
from flywheel.tasks.base import Task
from flywheel.tasks.sources import DEV, POOL, REPLAY, source_of, tagged
from flywheel.tasks.suites import train_suite
from flywheel.train.common.difficulty import history_pass_rates, training_attempts
from flywheel.train.config import TrainConfig
from flywheel.warehouse import connect

DEV_SEED = 7_000
"""The dev split's train-suite seed (the train suites' own is 1_000, the held-out split's 9_000)."""


def dev_split(domains: Sequence[str], n: int, exclude: Collection[str]) -> list[Task]:
    """`n` train-suite tasks per domain (fewer where the suite runs out), none of them in `exclude`."""
    out: list[Task] = []
    for d in domains:
        if n <= 0:
            break
        fresh = [t for t in train_suite(d, n + len(exclude), seed=DEV_SEED) if t.task_id not in exclude]
        out.extend(tagged(fresh[:n], DEV))
    return out


@dataclass
class TaskSet:
    """The run's tasks (pool + replay), the scheduler's prior pass rates, the dev split, and counts."""

    tasks: list[Task]
    pass_rates: dict[str, float]
    source: str  # "task_pool" (mined pool + replay) | "train_suites" (no pool yet)
    dev: list[Task] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """Tasks per source (`pool`, `replay`) and the dev split's size."""
        out: dict[str, int] = {}
        for t in self.tasks:
            src = source_of(t)
            out[src] = out.get(src, 0) + 1
        out["dev"] = len(self.dev)
        return out


REPLAY_WINDOW = 4
"""Replay picks from the first `REPLAY_WINDOW * n` tasks of a train suite, so turns rotate through it."""


def replay_tasks(domains: Sequence[str], n: int, exclude: set[str],
                 attempts: Mapping[str, int] | None = None) -> list[Task]:
    """`n` train-suite tasks per domain not in `exclude` (fewer where the suite runs out): those earlier
    training runs attempted least (`attempts`, from `difficulty_history`) first, suite order breaking ties,
    so each turn replays tasks its predecessors have not trained on yet."""
    seen = attempts or {}
    out: list[Task] = []
    for d in domains:
        if n > 0:
            window = [t for t in train_suite(d, REPLAY_WINDOW * n + len(exclude)) if t.task_id not in exclude]
            order = sorted(range(len(window)), key=lambda i: (seen.get(window[i].task_id, 0), i))
            out.extend(tagged([window[i] for i in sorted(order[:n])], REPLAY))
    return out


def mined_pool(warehouse: Path | None, domains: Sequence[str]) -> list[Task]:
    """The pool tasks with a valid verifier, in rank order ([] before the first pool)."""
    if warehouse is None or not Path(warehouse).exists():
        return []
    con = connect(warehouse, read_only=True)
    try:
        tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
        if "task_pool" not in tables:
            return []
        tasks = load_task_pool(con, domains=list(domains))
        if "verifiers" in tables:
            valid = {r[0] for r in con.execute("SELECT task_id FROM verifiers WHERE valid").fetchall()}
            tasks = [t for t in tasks if t.task_id in valid]
        return tagged(tasks, POOL)
    finally:
        con.close()


def _history(warehouse: Path | None, read: Callable[[duckdb.DuckDBPyConnection], dict]) -> dict:
    if warehouse is None or not Path(warehouse).exists():
        return {}
    con = connect(warehouse, read_only=True)
    try:
        return read(con)
    finally:
        con.close()


def build_task_set(warehouse: Path | None, config: TrainConfig, fallback_per_domain: int = 400,
                   log_date: dt.date | str | None = None) -> TaskSet:
    """The run's task set for `config`'s weighted domains (see module doc); replay rotates past the
    tasks training runs of days before `log_date` attempted (None: of every day)."""
    domains = [d for d, w in config.domain_weights.items() if w > 0]
    pool = mined_pool(warehouse, domains) if config.use_pool else []
    pool_ids = {t.task_id for t in pool}
    dev = dev_split(domains, config.dev_tasks_per_domain, pool_ids) if config.dev_every else []
    taken = pool_ids | {t.task_id for t in dev}
    n_replay = (config.replay_tasks_per_domain if pool or not config.use_pool
                else max(config.replay_tasks_per_domain, fallback_per_domain))
    replay = replay_tasks(domains, n_replay, taken, _history(warehouse, lambda con: training_attempts(con, log_date)))
    prior = {t.task_id: 1.0 - float(t.meta["difficulty"]) for t in pool if t.meta.get("difficulty") is not None}
    prior.update(_history(warehouse, lambda con: history_pass_rates(con, [t.task_id for t in replay])))
    return TaskSet(pool + replay, prior, "task_pool" if pool else "train_suites", dev)
