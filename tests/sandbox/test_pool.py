"""SandboxPool: warm, bounded, and retrying only what the infrastructure broke."""

from __future__ import annotations

import os
import signal
import statistics
import threading
import time
from pathlib import Path

import pytest

from flywheel.sandbox import Limits, SandboxInfraError
from flywheel.sandbox.local import LocalSandbox, available
from flywheel.sandbox.pool import SandboxPool

pytestmark = pytest.mark.skipif(not available()[0], reason=available()[1] or "local sandbox unavailable")


def _children(pid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(d.name))
    return out


def test_concurrency_is_bounded_and_order_kept():
    code = "import time\nt = time.time()\ntime.sleep(0.4)\nprint(t, time.time())\n"
    with SandboxPool(workers=2) as pool:
        results = pool.map([{"code": code + f"print({i})"} for i in range(6)])
    assert [int(r.stdout.split()[-1]) for r in results] == list(range(6))
    spans = [tuple(map(float, r.stdout.split()[:2])) for r in results]
    events = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])
    live = peak = 0
    for _, d in events:
        live += d
        peak = max(peak, live)
    assert peak == 2, spans


def test_infra_fault_is_retried():
    with SandboxPool(workers=1, retries=2) as pool:
        zygote = pool.sandbox._server._proc.pid
        out = {}
        t = threading.Thread(target=lambda: out.setdefault("r", pool.run("import time\ntime.sleep(1.0)\nprint('done')")))
        t.start()
        deadline = time.time() + 10
        busy: list[int] = []
        while not busy and time.time() < deadline:  # the monitor running our program (spares have no child)
            busy = [m for m in _children(zygote) if _children(m)]
            time.sleep(0.01)
        (monitor,) = busy
        os.kill(monitor, signal.SIGKILL)  # the monitor dies mid-execution: an infrastructure fault
        t.join(10)
        assert out["r"].stdout == "done\n"
        assert pool.stats["infra_retries"] == 1 and pool.stats["executions"] == 1


def test_task_failures_are_never_retried():
    with SandboxPool(workers=1, retries=3) as pool:
        t0 = time.time()
        r = pool.run("import time\ntime.sleep(30)", limits=Limits(wall_timeout_s=1))
        assert r.killed_reason == "wall_timeout" and time.time() - t0 < 4
        assert pool.run("raise SystemExit(7)").exit_code == 7
        assert pool.run("1/0").exit_code == 1
        assert pool.stats == {"executions": 3, "infra_retries": 0, "infra_failures": 0}


def test_persistent_infra_fault_is_raised_after_retries():
    pool = SandboxPool(workers=1, retries=2, backoff_s=0.0, warm=False, python="/nonexistent/python3")
    with pytest.raises(SandboxInfraError):
        pool.run("print(1)")
    assert pool.stats["infra_retries"] == 2 and pool.stats["infra_failures"] == 1


def test_fork_server_restarts_after_dying():
    with SandboxPool(workers=1) as pool:
        assert pool.run("print(1)").stdout == "1\n"
        os.kill(pool.sandbox._server._proc.pid, signal.SIGKILL)
        pool.sandbox._server._proc.wait()
        assert pool.run("print(2)").stdout == "2\n"


def test_warm_pool_is_faster_than_a_fresh_interpreter():
    once = LocalSandbox()
    with SandboxPool(workers=1) as pool:
        def p50(run) -> float:
            ts = []
            for _ in range(15):
                t = time.perf_counter()
                assert run("print(1)").exit_code == 0
                ts.append(time.perf_counter() - t)
            return statistics.median(ts)

        warm, cold = p50(pool.run), p50(once.run)
    assert warm < cold, (warm, cold)


def test_spare_monitors_are_ready_and_cleaned_up():
    pool = SandboxPool(workers=1)
    server = pool.sandbox._server
    zygote = server._proc.pid
    deadline = time.time() + 5
    while len(_children(zygote)) < server.spares and time.time() < deadline:
        time.sleep(0.01)
    spares = _children(zygote)
    assert len(spares) == server.spares  # cloned ahead of any request
    assert pool.run("print(1)").stdout == "1\n"
    pool.close()
    deadline = time.time() + 5
    while any(Path(f"/proc/{p}").exists() and "Z" not in _state(p) for p in spares) and time.time() < deadline:
        time.sleep(0.02)
    assert not [p for p in spares if Path(f"/proc/{p}").exists() and "Z" not in _state(p)]


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "Z"
