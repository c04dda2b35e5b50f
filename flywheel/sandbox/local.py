"""The `local` backend: every execution in fresh Linux namespaces, limited by a cgroup, rlimits and seccomp.

How (details in `_isolate.py`, `_isolate_ns.py`, `_isolate_payload.py`, `_isolate_limits.py`,
`_isolate_reap.py`, `_seccomp.py` and `_cgroup.py`, the trusted side that runs under the host's system Python): each
execution gets a new mount, PID, network, IPC, UTS and cgroup namespace; a root built on a fresh
tmpfs with `/usr` read-only, a private writable `/work` (the request's files, `main.py` included)
and `/tmp`, a minimal `/dev` and `/etc`; the host's filesystem is detached (`pivot_root`). The
network namespace has only a downed loopback. The run as a whole is held by its own cgroup (memory
with swap off, process count) where one can be made, else by a memory watchdog, memfd refused and
IPC caps. The program runs with no capabilities, no_new_privs, a seccomp deny-list (no namespaces,
mounts, keyrings, ptrace, eBPF, io_uring, ...), rlimits, an otherwise empty environment, and no way
to speak for the sandbox (its setup reports on a pipe closed before its first line runs).

Two modes: as root (each run a fresh host uid from a 2**30 space) and rootless (any user: the fork
server makes a user namespace of its own, each run one below it; chosen when not root, or with
`rootless=True`). A wall timeout during which the run starved for a CPU it wanted is an
infrastructure error (`SandboxInfraError`, retried), see `_isolate_limits.overloaded`.

What this does NOT protect against: kernel bugs in the syscalls still allowed (the kernel is
shared), CPU cache/timing side channels, host-wide pressure a cgroup does not bound (page cache of
`/usr`, kernel memory outside the cgroup), reading world-readable files under `/usr`. For hostile
multi-tenant use run the `docker` backend (or gVisor) on a dedicated host or a VM. docs/sandbox.md
has the threat model and how each layer is tested.
"""

from __future__ import annotations

import marshal
import os
import socket
import subprocess
import sys
import threading
from dataclasses import asdict
from pathlib import Path

from flywheel.sandbox.base import ExecResult, Limits, SandboxInfraError

ISOLATE = Path(__file__).with_name("_isolate.py")
LAUNCH = ("import sys;exec(compile(open(sys.argv[1]+'/_isolate.py').read(),'/sandbox/_isolate.py','exec'))")
"""The trusted half starts as `python -c LAUNCH <folder> <mode>`: every code object it runs is named
`/sandbox/...`, so no frame, argv or /proc view the payload can reach names the host's checkout."""


def isolate_cmd(python: str, mode: str, rootless: bool, cgroup: bool) -> list[str]:
    flags = (["--rootless"] if rootless else []) + ([] if cgroup else ["--no-cgroup"])
    return [python, "-I", "-S", "-B", "-c", LAUNCH, str(ISOLATE.parent), mode, *flags]


def default_python() -> str:
    """The interpreter used inside the sandbox: the host's system Python if present (fast start, no shim)."""
    for cand in (os.environ.get("FLYWHEEL_SANDBOX_PYTHON"), "/usr/bin/python3", "/usr/local/bin/python3"):
        if cand and os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    return os.path.realpath(sys.executable)


def available(rootless: bool | None = None) -> tuple[bool, str]:
    """Whether the local backend can run here (as root, or rootless when `rootless` or not root), and why not."""
    if not hasattr(os, "pidfd_open"):
        return False, "needs Linux >= 5.3 (pidfd_open)"
    if rootless or (rootless is None and os.geteuid() != 0):
        try:
            with open("/proc/sys/user/max_user_namespaces") as f:
                if int(f.read()) < 2:
                    return False, "rootless mode needs user namespaces (user.max_user_namespaces is 0)"
        except (OSError, ValueError):
            return False, "rootless mode needs user namespaces (/proc/sys/user/max_user_namespaces unreadable)"
    return True, ""


def default_rootless() -> bool:
    """Rootless when not root: the mode is chosen by who runs it unless the caller says otherwise."""
    return os.geteuid() != 0


def check_names(names) -> None:
    """File names must stay inside the work dir (relative, no `..`)."""
    for name in names:
        rel = os.path.normpath(str(name))
        if not name or rel.startswith(("/", "..")) or rel in (".", "main.py"):
            raise ValueError(f"bad sandbox file name {name!r}: must be relative, inside the work dir, not main.py")


def _request(code: str, files, limits: Limits, stdin, collect, argv, env) -> dict:
    check_names(files or {})
    return {
        "code": code,
        "files": {str(k): (v.encode() if isinstance(v, str) else bytes(v)) for k, v in (files or {}).items()},
        "limits": asdict(limits),
        "stdin": stdin.encode() if isinstance(stdin, str) else bytes(stdin or b""),
        "collect": [str(c) for c in collect],
        "argv": [str(a) for a in argv],
        "env": {str(k): str(v) for k, v in (env or {}).items()},
    }


def _result(res: dict) -> ExecResult:
    if "infra_error" in res:
        raise SandboxInfraError(res["infra_error"])
    def dec(b):
        return (b.decode("utf-8", errors="replace"))
    return ExecResult(
        exit_code=int(res["exit_code"]),
        stdout=dec(res["stdout"]),
        stderr=dec(res["stderr"]),
        timed_out=bool(res["timed_out"]),
        killed_reason=res["killed_reason"],
        duration_s=float(res.get("duration_s", 0.0)),
        files=dict(res.get("files") or {}),
        truncated=bool(res.get("truncated", False)),
    )


class ForkServer:
    """A long-lived zygote (`_isolate.py serve`) that clones one monitor per execution; thread-safe.

    The zygote has built the read-only template root and pre-imported the common stdlib. It never
    sees a request: each execution gets its own socket, and the monitor cloned for it reads the
    request there. `spares` monitors are cloned ahead of time (fresh namespaces, `/proc` mounted, the
    run's cgroup joined, waiting on their socket), so a request skips that setup; each is used once
    and replaced in the background. If the zygote dies, `execute` raises `SandboxInfraError` and the next call
    restarts it.
    """

    def __init__(self, python: str | None = None, spares: int = 2, rootless: bool | None = None,
                 cgroup: bool = True):
        self.python = python or default_python()
        self.spares = spares
        self.rootless = default_rootless() if rootless is None else rootless
        self.cgroup = cgroup
        self.cgroup_why = ""
        """Empty when runs get cgroups; else why not (then the no-cgroup limits apply, see docs)."""
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._ctl: socket.socket | None = None
        self._ready: list[socket.socket] = []

    def start(self) -> None:
        with self._lock:
            self._start_locked()
            self._refill_locked()

    def _start_locked(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            return
        self._close_locked()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._proc = subprocess.Popen(
                isolate_cmd(self.python, "serve", self.rootless, self.cgroup),
                stdin=theirs, stdout=subprocess.DEVNULL, stderr=None, env={}, cwd="/", close_fds=True,
                start_new_session=True,
            )
        except OSError as e:
            ours.close()
            raise SandboxInfraError(f"cannot start the sandbox fork server: {e}") from e
        finally:
            theirs.close()
        ours.settimeout(30)
        try:
            ready = ours.recv(4096)
        except OSError as e:
            ready = b""
            err = e
        else:
            err = None
        if ready[:1] != b"R":
            self._proc.kill()
            self._proc.wait()
            ours.close()
            self._proc = None
            why = err or (ready[1:].decode(errors="replace") if ready else "no ready byte")
            raise SandboxInfraError(f"sandbox fork server did not start ({why})")
        ours.settimeout(None)
        self.cgroup_why = ready[1:].decode(errors="replace")
        self._ctl = ours

    def _spawn_locked(self) -> socket.socket:
        """Ask the zygote for one monitor; return our end of its socket."""
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            socket.send_fds(self._ctl, [b"F"], [theirs.fileno()])
        except OSError as e:
            mine.close()
            self._close_locked()
            raise SandboxInfraError(f"sandbox fork server is gone: {e}") from e
        finally:
            theirs.close()
        return mine

    def _refill_locked(self) -> None:
        while len(self._ready) < self.spares:
            self._ready.append(self._spawn_locked())

    def _close_locked(self) -> None:
        for s in self._ready:
            s.close()  # idle spares read EOF and exit
        self._ready.clear()
        if self._ctl is not None:
            self._ctl.close()
            self._ctl = None
        if self._proc is not None:
            try:
                self._proc.wait(timeout=3)  # it removes its runs' cgroups once its monitors are gone
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            self._proc = None

    def close(self) -> None:
        with self._lock:
            self._close_locked()

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def execute(self, req: dict, timeout: float) -> dict:
        with self._lock:
            self._start_locked()
            mine = self._ready.pop(0) if self._ready else self._spawn_locked()
            try:
                self._refill_locked()  # the replacement is cloned while this request runs
            except SandboxInfraError:
                pass  # this request's monitor exists already; the next call restarts the server
        try:
            return _exchange(mine, req, timeout)
        finally:
            mine.close()


def _exchange(sock: socket.socket, req: dict, timeout: float) -> dict:
    """Send one request frame, read one result frame, within `timeout` seconds."""
    sock.settimeout(timeout)
    try:
        fd = sock.fileno()
        os.set_blocking(fd, True)
        sock.settimeout(None)
        _write_with_timeout(sock, req, timeout)
        sock.settimeout(timeout)
        head = _recv_exact(sock, 8)
        n = int.from_bytes(head, "big")
        return marshal.loads(_recv_exact(sock, n))
    except (OSError, EOFError, ValueError) as e:
        raise SandboxInfraError(f"sandbox monitor failed: {type(e).__name__}: {e}") from e


def _write_with_timeout(sock: socket.socket, req: dict, timeout: float) -> None:
    data = marshal.dumps(req, 4)
    sock.settimeout(timeout)
    sock.sendall(len(data).to_bytes(8, "big") + data)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        b = sock.recv(min(n - len(buf), 1 << 20))
        if not b:
            raise EOFError("sandbox monitor closed the channel early")
        buf += b
    return bytes(buf)


class LocalSandbox:
    """Namespaced local execution (see the module docstring for what is and is not contained).

    `warm=False` (default): each `run` starts a fresh trusted interpreter (`_isolate.py once`),
    ~15-25 ms. `warm=True`: runs go through a shared `ForkServer` (a few ms each); this is what
    `SandboxPool` uses. Isolation is identical: the same code builds the namespaces either way.
    """

    name = "local"

    def __init__(self, limits: Limits | None = None, python: str | None = None, warm: bool = False,
                 rootless: bool | None = None, cgroup: bool = True):
        self.limits = limits or Limits()
        self.python = python or default_python()
        self.warm = warm
        self.rootless = default_rootless() if rootless is None else rootless
        self.cgroup = cgroup
        self._server: ForkServer | None = (ForkServer(self.python, rootless=self.rootless, cgroup=cgroup)
                                           if warm else None)

    def run(
        self,
        code: str,
        files: dict[str, str | bytes] | None = None,
        limits: Limits | None = None,
        stdin: str = "",
        collect: tuple[str, ...] = (),
        *,
        argv: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
    ) -> ExecResult:
        """Run `code` as `/work/main.py` with `files` beside it; `collect` names files to bring back.

        `argv` becomes `sys.argv[1:]`; `env` adds variables to the (otherwise empty) environment.
        Raises `SandboxInfraError` only when the sandbox itself failed; the code's own failure is a
        result (non-zero `exit_code`, `killed_reason`).
        """
        ok, why = available(self.rootless)
        if not ok:
            raise SandboxInfraError(why)
        lim = limits or self.limits
        req = _request(code, files, lim, stdin, collect, argv, env)
        timeout = float(lim.wall_timeout_s) + 30.0
        if self._server is not None:
            return _result(self._server.execute(req, timeout))
        return _result(self._run_once(req, timeout))

    def _run_once(self, req: dict, timeout: float) -> dict:
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            proc = subprocess.Popen(
                isolate_cmd(self.python, "once", self.rootless, self.cgroup),
                stdin=theirs, stdout=theirs, stderr=None, env={}, cwd="/", close_fds=True,
                start_new_session=True,
            )
        except OSError as e:
            mine.close()
            theirs.close()
            raise SandboxInfraError(f"cannot start the sandbox: {e}") from e
        theirs.close()
        try:
            return _exchange(mine, req, timeout)
        finally:
            mine.close()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def warmup(self) -> None:
        if self._server is not None:
            self._server.start()

    def close(self) -> None:
        if self._server is not None:
            self._server.close()

    def __enter__(self) -> LocalSandbox:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
