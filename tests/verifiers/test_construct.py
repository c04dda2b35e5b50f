"""Verifier construction from `task_pool`, the `verifiers` table, the asset and its blocking check."""

from __future__ import annotations

import json

import dagster as dg
import duckdb
import pytest

from flywheel.mining.pool import TASK_POOL_COLUMNS
from flywheel.tasks.agent_env import TOOLS
from flywheel.tasks.suites import train_suite
from flywheel.verifiers.construct import ConstructConfig, build_verifiers, valid_tasks
from flywheel.verifiers.registry import VerifierRegistry


def _sandbox_or_skip():
    from flywheel.sandbox.local import available

    ok, why = available()
    if not ok:
        pytest.skip(f"local sandbox unavailable: {why}")


def make_pool(con, n=2, broken=True):
    """The `task_pool` contract (I2's columns), filled from the suites plus deliberately broken tasks."""
    con.execute("CREATE OR REPLACE TABLE task_pool (" + ", ".join(f"{c} {t}" for c, t in TASK_POOL_COLUMNS) + ")")
    rows = []

    def add(task_id, domain, prompt, ref, failed):
        rows.append((task_id, domain, prompt, json.dumps(ref), failed, 4, 1, 0.25, 0.7, "frontier", len(rows) + 1))

    for d, failed in (("math", "Answer: -1"), ("code", "```python\ndef nope():\n    pass\n```"), ("agent", "")):
        for t in train_suite(d, n):
            add(t.task_id, d, t.prompt, t.reference, failed or None)
    if broken:
        m = train_suite("math", n + 1)[-1]
        add("bad-log", "math", m.prompt, {"answer": m.reference["answer"]}, m.solution)  # "failure" is right
        add("bad-ref", "code", "def f(x):\n", {"entry_point": "f"}, None)  # no tests
        add("weak-test", "code", "def f(x):\n", {"entry_point": "f", "test": "def check(candidate):\n    pass\n",
                                                 "canonical_solution": "    return x\n"}, None)
        add("no-gold", "code", "def f(x):\n", {"entry_point": "f", "test": "def check(candidate):\n"
                                               "    assert candidate(1) == 1\n"}, None)
        add("noop-goal", "agent", "p", {"tools": TOOLS, "initial_state": {"a": 1}, "goal": {"a": 1}}, None)
    con.executemany("INSERT INTO task_pool VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    return rows


@pytest.fixture(scope="module")
def built():
    _sandbox_or_skip()
    from flywheel.sandbox import get_pool

    pool = get_pool(workers=2)
    con = duckdb.connect(":memory:")
    make_pool(con)
    reg = VerifierRegistry(sandbox=pool, code_timeout_s=1.5)
    report = build_verifiers(con, ConstructConfig(), reg)
    yield con, report
    pool.close()


def test_valid_and_invalid_verifiers_counted(built):
    con, report = built
    assert report.total == 11 and report.valid == 6 and report.invalid == 5
    assert report.by_domain == {"math": {"valid": 2, "invalid": 1}, "code": {"valid": 2, "invalid": 3},
                                "agent": {"valid": 2, "invalid": 1}}
    reasons = dict(con.execute("SELECT task_id, reason FROM verifiers WHERE NOT valid").fetchall())
    assert reasons["bad-log"] == "accepts the logged failing response"
    assert reasons["bad-ref"].startswith("unusable reference")
    assert reasons["weak-test"].startswith("accepts hack probe")
    assert reasons["no-gold"] == "no reference solution to validate against"
    assert reasons["noop-goal"].startswith("accepts hack probe finish_only")
    assert report.slow_probe_failures == {}
    assert "| code | 2 | 3 |" in report.markdown()


def test_table_contract_and_valid_tasks(built):
    con, _ = built
    cols = [r[0] for r in con.execute("DESCRIBE verifiers").fetchall()]
    assert cols == ["task_id", "domain", "verifier_version", "valid", "reason", "task", "validated_at"]
    versions = dict(con.execute("SELECT DISTINCT domain, verifier_version FROM verifiers").fetchall())
    assert versions["math"] == "math-2" and versions["code"].startswith("code-1-")
    tasks = valid_tasks(con)
    assert len(tasks) == 6 and {d for d, _ in tasks} == {"math", "code", "agent"}
    assert all("task_id" in t for _, t in tasks)
    assert [d for d, _ in valid_tasks(con, ["math"])] == ["math", "math"]


def test_rebuild_is_a_verdict_cache_lookup(built):
    """The next turn re-validates the same pool from the verdict cache, with the same outcome."""
    con, first = built
    before = dict(con.execute("SELECT task_id, valid FROM verifiers").fetchall())
    again = build_verifiers(con, ConstructConfig(), VerifierRegistry(sandbox=None, code_timeout_s=1.5))
    assert first.cache_hits == 0 and again.cache_hits > 0
    assert dict(con.execute("SELECT task_id, valid FROM verifiers").fetchall()) == before
    assert (again.valid, again.invalid) == (first.valid, first.invalid)


def test_asset_and_blocking_check(tmp_path):
    _sandbox_or_skip()
    from assets.verifiers import verifiers, verifiers_valid_share
    from resources.sandbox import SandboxPoolResource
    from resources.storage import StorageResource

    db = str(tmp_path / "warehouse.duckdb")  # the storage home's warehouse
    con = duckdb.connect(db)
    make_pool(con, n=1, broken=False)
    con.execute("INSERT INTO task_pool SELECT 'bad-ref', 'code', 'x', '{\"entry_point\": \"f\"}', NULL, 1, 0, 0, 1, "
                "'frontier', 99")
    con.close()

    @dg.asset(name="task_pool")
    def task_pool_stub() -> None:
        """Stands in for I2's upstream asset so the graph resolves; the table is the fixture above."""

    def run(floor):
        return dg.materialize(
            [task_pool_stub, verifiers, verifiers_valid_share],
            selection=dg.AssetSelection.assets("verifiers"),
            resources={"storage": StorageResource(home=str(tmp_path)), "sandbox": SandboxPoolResource()},
            run_config={"ops": {"verifiers": {"config": {"code_timeout_s": 1.5, "slow_probes": False}},
                                "verifiers_verifiers_valid_share": {"config": {"min_valid_share": floor}}}},
            raise_on_error=False,
        )

    ok = run(0.5)
    assert ok.success
    meta = ok.asset_materializations_for_node("verifiers")[0].metadata
    assert meta["valid"].value == 3 and meta["invalid"].value == 1 and meta["valid_share"].value == 0.75
    assert "| reason | verifiers |" in meta["counts"].value
    [check] = ok.get_asset_check_evaluations()
    assert check.passed
    bad = run(0.9)
    [check] = bad.get_asset_check_evaluations()
    assert not check.passed and not bad.success  # blocking: the run fails
