"""Limits, the monitor's side, for `_isolate.py` (the trusted half of the local sandbox).

Stdlib only: loaded by `_isolate.py` under the host's system interpreter, never imported into the venv.
`pump` feeds stdin, caps the captured output, enforces the wall clock (telling the machine's
overload from the program's own slowness, see `overloaded`), watches the run's memory when it has
no cgroup, kills every process of the namespace and names the limit that ended the run. The
payload's side (rlimits, identity, seccomp) is `_isolate_payload.py`.
"""

from __future__ import annotations

import os
import select
import signal
import time


def kill_all() -> None:
    """As PID 1 of the namespace: SIGKILL every other process in it, and reap them."""
    if os.getpid() != 1:  # never outside our own PID namespace: kill(-1) as host root kills the host
        raise RuntimeError("refusing kill(-1) outside a private PID namespace")
    try:
        os.kill(-1, signal.SIGKILL)
    except ProcessLookupError:
        pass
    while True:
        try:
            if os.waitpid(-1, 0)[0] == 0:
                break
        except ChildProcessError:
            break
        except InterruptedError:
            continue


class Overloaded(RuntimeError):
    """The wall clock ran out while the run waited for a CPU the machine did not give it."""


def _tasks() -> list[str]:
    """`/proc/<pid>/task/<tid>` of every task of the run (all but PID 1, the monitor)."""
    out = []
    for p in os.listdir("/proc"):
        if p.isdigit() and p != "1":
            try:
                out += [f"/proc/{p}/task/{t}" for t in os.listdir(f"/proc/{p}/task")]
            except OSError:
                pass
    return out


def _read(path: str) -> str:
    try:
        with open(path, "rb") as f:
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def starvation(cg) -> tuple[float, float]:
    """(CPU seconds the run used, seconds its tasks waited runnable for a CPU), read at the deadline.

    The wait is each live task's run-queue delay (`schedstat`); the CPU is the run's cgroup usage
    when there is one (every process it ever had), else the live tasks' own and reaped children's.
    """
    used = cg.cpu_s() if cg is not None else None
    waited, own = 0.0, 0.0
    tick = os.sysconf("SC_CLK_TCK")
    for t in _tasks():
        f = _read(t + "/schedstat").split()
        if len(f) >= 2:
            own += int(f[0]) / 1e9
            waited += int(f[1]) / 1e9
        if used is None and t.rsplit("/", 1)[1] == t.split("/")[2]:  # the thread group's leader
            st = _read(t + "/stat").rpartition(")")[2].split()
            if len(st) > 14:
                own += (int(st[13]) + int(st[14])) / tick  # cutime, cstime: reaped children
    return (own if used is None else used), waited


def overloaded(lim: dict, cg) -> str | None:
    """The rule: a wall timeout is the machine's fault (infrastructure, retried) when the run's tasks
    waited runnable for at least half the wall limit while the run used at most a quarter of it in
    CPU. A program that sleeps or blocks waits for nothing; one that spins (or keeps its own
    processes busy) has used the CPU: both are its own timeout."""
    wall = float(lim["wall_timeout_s"])
    used, waited = starvation(cg)
    if waited >= 0.5 * wall and used <= 0.25 * wall:
        return f"machine overloaded: the run waited {waited:.2f}s for a CPU and ran {used:.2f}s of its {wall:g}s"
    return None


def pss_mb() -> float:
    """Proportional resident memory of the run's processes (the no-cgroup memory watchdog)."""
    kb = 0
    for p in os.listdir("/proc"):
        if p.isdigit() and p != "1":
            for line in _read(f"/proc/{p}/smaps_rollup").splitlines():
                if line.startswith("Pss:"):
                    kb += int(line.split()[1])
                    break
    return kb / 1024


WATCH_S = 0.05  # how often the no-cgroup watchdog sums the run's memory


def pump(pid: int, in_w: int, out_r: int, err_r: int, stdin: bytes, lim: dict, t0: float, cg=None) -> dict:
    """Feed stdin, capture output up to the cap, enforce the wall clock; reap the payload and its leftovers.

    `cg` is the run's cgroup (`_cgroup.Run`) or None; without one the monitor sums the run's memory
    every `WATCH_S` and kills it past `memory_mb`. Raises `Overloaded` (see `overloaded`).
    """
    cap = int(lim["max_output_bytes"])
    mem_cap = float(lim["memory_mb"])
    next_watch = time.monotonic() + WATCH_S if cg is None else float("inf")
    deadline = t0 + float(lim["wall_timeout_s"])
    bufs = {out_r: bytearray(), err_r: bytearray()}
    total = 0
    killed = None
    truncated = False
    pidfd = os.pidfd_open(pid)
    poller = select.poll()
    poller.register(out_r, select.POLLIN)
    poller.register(err_r, select.POLLIN)
    poller.register(pidfd, select.POLLIN)
    if stdin:
        os.set_blocking(in_w, False)
        poller.register(in_w, select.POLLOUT)
    else:
        os.close(in_w)
        in_w = -1
    open_fds = {out_r, err_r}
    status = None
    cpu_used = 0.0
    while open_fds or status is None:
        if status is None and killed is None:
            now = time.monotonic()
            timeout_ms = max(0, int((min(deadline, next_watch) - now) * 1000))
            if now >= deadline:
                killed = "wall_timeout"
                why = overloaded(lim, cg)
                os.kill(pid, signal.SIGKILL)
                if why:
                    kill_all()
                    raise Overloaded(why)
            elif now >= next_watch:
                next_watch = now + WATCH_S
                if pss_mb() > mem_cap:
                    killed = "memory"
                    os.kill(pid, signal.SIGKILL)
        else:
            timeout_ms = 1000
        events = poller.poll(timeout_ms)
        if not events and status is not None:
            break  # payload gone and leftovers killed, yet a pipe stays open: stop waiting
        for fd, ev in events:
            if fd == pidfd:
                _, status, ru = os.wait4(pid, 0)
                cpu_used = ru.ru_utime + ru.ru_stime
                poller.unregister(pidfd)
                os.close(pidfd)
                kill_all()  # background processes die with the payload; their pipe ends close
            elif fd == in_w:
                try:
                    n = os.write(in_w, stdin[:65536])
                    stdin = stdin[n:]
                except OSError:
                    stdin = b""
                if not stdin or ev & (select.POLLERR | select.POLLHUP):
                    poller.unregister(in_w)
                    os.close(in_w)
                    in_w = -1
            else:
                data = os.read(fd, 65536) if ev & (select.POLLIN | select.POLLHUP | select.POLLERR) else b""
                if not data:
                    poller.unregister(fd)
                    open_fds.discard(fd)
                    os.close(fd)
                    continue
                room = cap - total
                if len(data) > room:
                    data = data[: max(0, room)]
                    truncated = True
                    if killed is None and status is None:
                        killed = "output_limit"
                        os.kill(pid, signal.SIGKILL)
                bufs[fd] += data
                total += len(data)
    if in_w >= 0:
        os.close(in_w)
    for fd in list(open_fds):
        os.close(fd)
    kill_all()
    stdout, stderr = bytes(bufs[out_r]), bytes(bufs[err_r])
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        exit_code = -sig
        if killed is None:
            killed = {signal.SIGXCPU: "cpu_time", signal.SIGXFSZ: "file_size"}.get(sig)
            if killed is None and sig == signal.SIGKILL:
                killed = "cpu_time" if cpu_used >= float(lim["cpu_time_s"]) else "killed"
            if killed is None and sig == signal.SIGSEGV:
                killed = "memory" if b"MemoryError" in stderr[-2000:] else "crashed"
    else:
        exit_code = os.WEXITSTATUS(status)
        if killed is None and exit_code != 0 and b"MemoryError" in stderr[-4000:]:
            killed = "memory"
    if killed is None and exit_code != 0 and cg is not None and cg.oom_killed():
        killed = "memory"  # the cgroup's OOM killer ended the payload or one of its processes
    if truncated:  # the note counts against the cap too: stdout + stderr never exceed it
        note = f"\n[flywheel sandbox: output truncated at {cap} bytes]\n".encode()
        over = len(stdout) + len(stderr) + len(note) - cap
        if over > 0 and len(stderr) >= len(stdout):  # the flood loses its end, the other stream stays whole
            stderr, over = stderr[: max(0, len(stderr) - over)], over - min(over, len(stderr))
        if over > 0:
            stdout = stdout[: max(0, len(stdout) - over)]
        stderr = stderr + note
    return {"exit_code": exit_code, "stdout": stdout, "stderr": stderr, "timed_out": killed == "wall_timeout",
            "killed_reason": killed, "truncated": truncated}
