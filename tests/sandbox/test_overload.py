"""A wall timeout the machine caused (the run starved for CPU) is an infrastructure error; one the program
caused (it slept, blocked or spun) is its own failure.

The machine is overloaded on purpose and deterministically: the test pins itself (and so the one-shot
sandbox it starts) to one CPU, runs at nice -10, and starts hogs at nice -20 (their sessions too, for
autogroup scheduling) on that CPU, which then get nearly all of it. Only that CPU is busy, and only for a few seconds.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from contextlib import contextmanager

import pytest

from flywheel.sandbox.base import Limits, SandboxInfraError
from flywheel.sandbox.local import LocalSandbox, available

pytestmark = pytest.mark.skipif(not available()[0] or os.geteuid() != 0,
                                reason=available()[1] or "needs root (negative nice values)")
SPIN = "while True:\n    pass\n"
SLEEP = "import time\ntime.sleep(60)\n"
LIM = Limits(wall_timeout_s=1.5, cpu_time_s=10)


@contextmanager
def pinned(hogs: int, after_s: float = 0.0):
    """This thread (and what it starts) on one CPU at nice -10; `hogs` nice -20 busy loops on it too,
    started `after_s` seconds later (from another thread) when positive."""
    cpu = max(os.sched_getaffinity(0))
    old_aff, old_nice = os.sched_getaffinity(0), os.getpriority(os.PRIO_PROCESS, 0)
    procs: list[subprocess.Popen] = []
    if after_s > 0:
        t = threading.Timer(after_s, lambda: procs.extend(_hogs(hogs, cpu)))
        t.start()
    else:
        procs += _hogs(hogs, cpu)
    try:
        os.sched_setaffinity(0, {cpu})
        os.setpriority(os.PRIO_PROCESS, 0, -10)
        yield
    finally:
        os.setpriority(os.PRIO_PROCESS, 0, old_nice)
        os.sched_setaffinity(0, old_aff)
        if after_s > 0:
            t.join()
        for p in procs:
            p.kill()
            p.wait()


def _hogs(n: int, cpu: int) -> list[subprocess.Popen]:
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True,
                              preexec_fn=lambda: (os.sched_setaffinity(0, {cpu}), os.setpriority(os.PRIO_PROCESS, 0, -20)))
             for _ in range(n)]
    for p in procs:  # with autogroup scheduling each session is weighed as a whole: weigh theirs too
        try:
            with open(f"/proc/{p.pid}/autogroup", "w") as f:
                f.write("-20")
        except OSError:
            pass
    return procs


def test_starved_run_is_an_infra_error():
    with pinned(hogs=4, after_s=0.3):  # once it spins (sooner, its interpreter could not even start)
        with pytest.raises(SandboxInfraError, match="overloaded"):
            LocalSandbox().run(SPIN, limits=Limits(wall_timeout_s=3, cpu_time_s=10))


def test_sleeping_on_an_overloaded_machine_is_still_a_timeout():
    with pinned(hogs=4, after_s=0.7):  # the overload starts once the program sleeps
        r = LocalSandbox().run(SLEEP, limits=Limits(wall_timeout_s=2.5, cpu_time_s=10))
    assert r.timed_out and r.killed_reason == "wall_timeout"


def test_spinning_or_forking_on_a_quiet_cpu_is_the_programs_timeout():
    if os.getloadavg()[0] > (os.cpu_count() or 1) - 0.5:
        pytest.skip(f"this machine is busy (load {os.getloadavg()[0]:.1f}): no CPU is quiet")
    with pinned(hogs=0):
        r = LocalSandbox().run(SPIN, limits=LIM)
        assert r.timed_out and r.killed_reason == "wall_timeout"
        # its own processes keep the CPU busy: that is its own load, not the machine's
        r = LocalSandbox().run("import os\nfor _ in range(6):\n    os.fork()\n" + SPIN,
                               limits=Limits(wall_timeout_s=1.5, cpu_time_s=10, max_processes=80))
        assert r.timed_out and r.killed_reason == "wall_timeout"
