"""The entry points the asset, the CLI and `flywheel turn` call: tasks from the warehouse, then train.

    tasks, prior, source = load_training_tasks(paths.warehouse, domains=("math", "code", "agent"))
    result = train_policy(GRPOConfig(), base_model_dir, "tiny-v1", paths=paths, tasks=tasks, pass_rates=prior)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import duckdb

from flywheel.mining.pool import load_task_pool
from flywheel.paths import FlywheelPaths
from flywheel.tasks.base import Task
from flywheel.tasks.suites import train_suite
from flywheel.train.config import GRPOConfig
from flywheel.train.telemetry import Telemetry
from flywheel.train.trainer import RunInputs, TrainResult, train_rlvr


def load_training_tasks(
    warehouse: Path | None, domains: Sequence[str] = ("math", "code", "agent"), fallback_per_domain: int = 400
) -> tuple[list[Task], dict[str, float], str]:
    """(tasks, prior pass rates, source): the mined `task_pool` restricted to tasks whose verifier
    is valid, with the pool's difficulty as the scheduler's prior; the embedded train suites when
    there is no pool yet (a fresh machine)."""
    if warehouse is not None and Path(warehouse).exists():
        con = duckdb.connect(str(warehouse), read_only=True)
        try:
            tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
            if "task_pool" in tables:
                tasks = load_task_pool(con, domains=list(domains))
                if "verifiers" in tables:
                    valid = {r[0] for r in con.execute("SELECT task_id FROM verifiers WHERE valid").fetchall()}
                    tasks = [t for t in tasks if t.task_id in valid]
                if tasks:
                    prior = {
                        t.task_id: 1.0 - float(t.meta["difficulty"])
                        for t in tasks if t.meta.get("difficulty") is not None
                    }
                    return tasks, prior, "task_pool"
        finally:
            con.close()
    return [t for d in domains for t in train_suite(d, fallback_per_domain)], {}, "train_suites"


def policy_dir(paths: FlywheelPaths, release: str) -> Path:
    """Where the policy trained from base model `release` lives (the evaluation stage reads it)."""
    return paths.models / "policies" / release


def train_policy(
    config: GRPOConfig,
    base_model: str | Path,
    release: str,
    *,
    paths: FlywheelPaths,
    tasks: Sequence[Task] | None = None,
    pass_rates: Mapping[str, float] | None = None,
    telemetry: Telemetry | None = None,
    resume: bool = False,
    data_partitions: Mapping[str, Any] | None = None,
) -> TrainResult:
    """Train the policy of base model `release` and save it to `policy_dir(paths, release)`."""
    source = "given"
    if tasks is None:
        tasks, prior, source = load_training_tasks(paths.warehouse, tuple(config.domain_weights))
        pass_rates = {**prior, **(pass_rates or {})}
    parts = {"base_model": release, "task_source": source, **(data_partitions or {})}
    inputs = RunInputs(base_model, tasks, paths, name=f"rlvr-{release}", output_dir=policy_dir(paths, release),
                       pass_rates=pass_rates, data_partitions=parts)
    return train_rlvr(config, inputs, telemetry=telemetry, resume=resume)
