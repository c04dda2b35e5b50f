"""Which pool tasks get verifiers: per domain, in proportion to the training run's domain weights
(not the first N of the interleaved ranking, which gives every domain the same count)."""

from __future__ import annotations

import json

import duckdb

from flywheel.mining.pool import TASK_POOL_COLUMNS, load_task_pool
from flywheel.tasks.suites import train_suite
from flywheel.verifiers.construct import ConstructConfig, build_verifiers, domain_quotas
from flywheel.verifiers.registry import VerifierRegistry


def _pool(con, per_domain: dict[str, int]) -> None:
    """A task_pool whose ranks interleave the domains, as mining writes it."""
    con.execute("CREATE OR REPLACE TABLE task_pool (" + ", ".join(f"{c} {t}" for c, t in TASK_POOL_COLUMNS) + ")")
    suites = {d: train_suite(d, n) for d, n in per_domain.items()}
    rows, rank = [], 0
    for i in range(max(per_domain.values())):
        for d in sorted(suites):
            if i < len(suites[d]):
                t = suites[d][i]
                rank += 1
                rows.append((t.task_id, d, t.prompt, json.dumps(t.reference), None, 4, 2, 0.5, 0.5, "frontier", rank))
    con.executemany("INSERT INTO task_pool VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)


def test_domain_quotas_follow_the_weights_and_give_every_weighted_domain_one():
    assert domain_quotas(300, {"math": 0.9, "code": 0.05, "agent": 0.05}) == {"math": 270, "code": 15, "agent": 15}
    assert domain_quotas(10, {"math": 0.98, "code": 0.02, "agent": 0.0}) == {"math": 10, "code": 1}


def test_load_task_pool_keeps_each_domains_first_by_rank():
    con = duckdb.connect(":memory:")
    _pool(con, {"math": 6, "code": 3, "agent": 3})
    got = load_task_pool(con, per_domain={"math": 4, "code": 1})
    assert [t.domain for t in got].count("math") == 4 and [t.domain for t in got].count("code") == 1
    assert "agent" not in {t.domain for t in got}
    ranks = [t.meta["rank"] for t in got]
    assert ranks == sorted(ranks)
    assert [t.task_id for t in got if t.domain == "math"] == [t.task_id for t in load_task_pool(con, ["math"])[:4]]
    assert len(load_task_pool(con, per_domain={"math": 4, "code": 1}, limit=3)) == 3


def test_verifiers_are_built_per_domain_by_weight():
    con = duckdb.connect(":memory:")
    _pool(con, {"math": 8, "agent": 8})
    cfg = ConstructConfig(max_tasks=6, domain_weights={"math": 2 / 3, "agent": 1 / 3}, slow_probes=False)
    report = build_verifiers(con, cfg, VerifierRegistry(sandbox=None))
    assert {d: sum(c.values()) for d, c in report.by_domain.items()} == {"math": 4, "agent": 2}
    # the interleaved rank alone would have given 3 and 3
    first6 = load_task_pool(con, limit=6, require_reference=False)
    assert sorted(t.domain for t in first6) == ["agent"] * 3 + ["math"] * 3
