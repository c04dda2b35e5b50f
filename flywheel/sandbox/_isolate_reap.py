"""The zygote's record of the monitors it cloned (stdlib only, loaded by `_isolate.py` like its siblings).

Why: a monitor is PID 1 of its run's namespaces; when it exits the kernel kills the rest of the run,
but its cgroup (root mode) must still be removed, and a zygote that is closing must not exit while a
monitor (an idle spare reading EOF included) still runs, or `close()` would leave processes behind.
One pidfd per monitor serves both: it becomes readable when the monitor exits.
"""

from __future__ import annotations

import os
import select
import time


class Monitors:
    """Live monitors: pidfd -> the name of the run cgroup to remove once it exits ("" for none)."""

    def __init__(self) -> None:
        self.live: dict[int, str] = {}

    def add(self, pid: int, cgroup: str, cgroups) -> None:
        """Track the monitor `pid` just cloned (its cgroup removed at once if it is already gone)."""
        try:
            self.live[os.pidfd_open(pid)] = cgroup
        except ProcessLookupError:
            if cgroup and cgroups is not None:
                cgroups.reap([cgroup])

    def fds(self) -> list[int]:
        """The pidfds, which a new monitor closes (they are the zygote's)."""
        return list(self.live)

    def reap(self, cgroups) -> None:
        """Forget monitors that have exited, removing their cgroups (one still busy is tried again later)."""
        if not self.live:
            return
        for pidfd in select.select(list(self.live), [], [], 0)[0]:
            cgroup = self.live[pidfd]
            if cgroup and cgroups is not None and cgroups.reap([cgroup]):
                continue  # a process of the run has not left its cgroup yet
            os.close(pidfd)
            del self.live[pidfd]

    def wait_all(self, cgroups, wait_s: float = 3.0) -> None:
        """On the way out: wait (bounded) for every monitor to exit and remove its cgroup."""
        deadline = time.monotonic() + wait_s
        while self.live and time.monotonic() < deadline:
            if select.select(list(self.live), [], [], 0.01)[0]:
                self.reap(cgroups)
                time.sleep(0.002)  # an exited monitor whose cgroup is still busy: do not spin
