"""The sandbox pool resource: limits from its fields, a pool that runs and enforces memory, torn down after a run."""

from __future__ import annotations

from flywheel.sandbox import Limits


def test_sandbox_pool_resource():
    from flywheel_dagster.resources.sandbox import SandboxPoolResource, default_resources

    assert isinstance(default_resources()["sandbox"], SandboxPoolResource)
    res = SandboxPoolResource(workers=1, memory_mb=128, wall_timeout_s=2)
    assert res.limits() == Limits(memory_mb=128, wall_timeout_s=2)
    pool = res.get_pool()
    try:
        r = pool.run("print(sum(range(10)))")
        assert r.stdout == "45\n"
        big = pool.run("x = bytearray(400 << 20)")
        assert big.killed_reason == "memory"
    finally:
        res.teardown_after_execution(None)
    assert res._pool is None
