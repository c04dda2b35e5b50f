"""The verdict cache: lookups return the stored verdict, a verifier version bump invalidates, timeouts are not stored."""

from __future__ import annotations

import duckdb

from flywheel.tasks.suites import train_suite
from flywheel.verifiers.batch import score, score_batch
from flywheel.verifiers.cache import VerdictCache
from flywheel.verifiers.common import response_hash


def test_cache_lookup_and_version_bump():
    from flywheel.verifiers.registry import VerifierRegistry

    reg = VerifierRegistry()
    cache = VerdictCache(duckdb.connect(":memory:"))
    t = train_suite("agent", 1)[0]
    items = [("agent", t.verifier_task(), t.solution), ("agent", t.verifier_task(), "no")]
    first = score_batch(items, registry=reg, cache=cache)
    assert cache.stats() == {"hits": 0, "misses": 2} and cache.count() == 2
    assert score_batch(items, registry=reg, cache=cache) == first and cache.hits == 2
    # a stored verdict is what a lookup returns: poison one row and see it come back
    key = (t.task_id, response_hash(t.verifier_task(), "no"), "agent", reg.version("agent"))
    cache.con.execute("UPDATE verdict_cache SET reason = 'from cache' WHERE response_hash = ?", [key[1]])
    assert score("agent", t.verifier_task(), "no", registry=reg, cache=cache).reason == "from cache"
    reg.get("agent").version = "agent-999"  # bumping the version invalidates every stored verdict
    assert score("agent", t.verifier_task(), "no", registry=reg, cache=cache).reason == "no tool calls"
    assert cache.count() == 3
    # same id, different task content: a different key
    other = dict(t.verifier_task(), goal={"apple": 99})
    assert response_hash(other, "no") != key[1]


def test_timeouts_are_not_cached():
    from flywheel.verifiers.verdict import Verdict

    cache = VerdictCache(duckdb.connect(":memory:"))
    assert cache.put_many([(("t", "h", "code", "v"), Verdict(0.0, False, "timeout", {"cacheable": False}))]) == 0
