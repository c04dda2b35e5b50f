"""Verifier construction from `task_pool`: valid and invalid verifiers counted, the `verifiers` table, the cache."""

from __future__ import annotations

import duckdb
import pytest

from flywheel.environments.code.verifier import CodeVerifier
from flywheel.environments.math.verifier import MathVerifier
from flywheel.verifiers.construct import ConstructConfig, build_verifiers, valid_tasks
from flywheel.verifiers.registry import VerifierRegistry


@pytest.fixture(scope="module")
def built(sandbox_pool, fill_task_pool):
    con = duckdb.connect(":memory:")
    fill_task_pool(con)
    reg = VerifierRegistry(sandbox=sandbox_pool, code_timeout_s=1.5)
    report = build_verifiers(con, ConstructConfig(), reg)
    return con, report


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
    assert versions["math"] == MathVerifier.version and versions["code"] == CodeVerifier.version
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
