"""The trusted half of the local sandbox: builds the namespaces, runs the code, enforces limits.

This file runs as a *script* under the host's system interpreter (`/usr/bin/python3 -I -S`), never
imported into the venv process, so it uses the standard library only. Two modes:

- `once`: read one request frame on stdin, run it, write one result frame on stdout, exit.
- `serve`: a fork server (zygote). It has already imported what untrusted code commonly needs;
  for every file descriptor it receives on its control socket (fd 0) it forks a *monitor* that
  reads the request from that descriptor, runs it and writes the result back there. The zygote
  never sees a request, so no task's data lingers in its memory for later children to read.

Started as `python -I -S -B -c <launcher> <folder> <mode> [--rootless] [--no-cgroup]`
(`local.LAUNCH`): this file and its siblings are compiled under `/sandbox/...` names, so nothing the
payload can reach (frames, code objects, argv, /proc) names the host's checkout. Once per process:
find a cgroup parent (`_cgroup.py`; root only), enter a user namespace (rootless), build the
read-only template root and detach the host's filesystem (`_isolate_ns.prepare_root`).

Per execution the monitor (trusted, never runs untrusted code), cloned into fresh mount, PID,
network, IPC, UTS (and cgroup) namespaces as their PID 1:
1. while still a spare: mounts its `/proc`, sets the hostname, joins a fresh session keyring,
   ignores signals, overwrites its argv with `init`; makes and joins the run's cgroup;
2. on the request: private `/work` (with the files) and `/tmp` tmpfs, IPC caps, the cgroup's limits;
3. forks the *payload* (`_isolate_payload.py`): rlimits, a fresh uid (root) or a user namespace of
   its own (rootless), no capabilities, no_new_privs, seccomp (`_seccomp.py`); it says "set up" on a
   status pipe and closes it before running `main.py` in the already-warm interpreter;
4. pumps stdin/stdout/stderr with the wall-clock deadline and the output cap (`_isolate_limits.py`),
   tells an overloaded machine from a slow program at the deadline, SIGKILLs the payload and every
   process of its PID namespace, and reads the `collect`ed files without following links.

Frames: 8-byte big-endian length + `marshal` (version 4) of a dict of plain types.

This file holds the protocol (frames, the zygote, the monitor's request cycle); the namespaces and
the filesystem are in `_isolate_ns.py`, the payload's setup in `_isolate_payload.py`, the output
pump in `_isolate_limits.py`.
"""

from __future__ import annotations

import ctypes
import importlib
import marshal
import os
import select
import signal
import socket
import struct
import sys
import time
import types

# The launcher (`local.LAUNCH`) passes this folder as argv[1] and runs this file under a neutral name;
# its siblings are compiled under neutral names too, so no code object, frame or argv the payload can
# reach names the host's checkout (see `_load`).
_DIR = sys.argv[1]
NEUTRAL = "/sandbox"


def _load(name: str, folder: str) -> types.ModuleType:
    mod = types.ModuleType(name)
    mod.__file__ = f"{NEUTRAL}/{name}.py"
    sys.modules[name] = mod
    with open(f"{folder}/{name}.py") as f:
        exec(compile(f.read(), mod.__file__, "exec"), mod.__dict__)
    return mod


for _m in ("_isolate_ns", "_seccomp", "_cgroup", "_isolate_payload", "_isolate_limits", "_isolate_reap"):
    _load(_m, _DIR)
from _cgroup import Cgroups  # noqa: E402
from _isolate_limits import kill_all, pump  # noqa: E402
from _isolate_ns import (  # noqa: E402
    NS_FLAGS,
    check_errno,
    fresh_namespaces,
    ipc_limits,
    libc,
    mount_private_dirs,
    prepare_namespaces,
    prepare_root,
    read_collected,
)
from _isolate_payload import OK, payload  # noqa: E402
from _isolate_reap import Monitors  # noqa: E402

ARGS = sys.argv[2:]
del _DIR
sys.argv = ["sandbox"]
sys.orig_argv = ["python3"]
globals().pop("d", None)  # the launcher's variable

UID_BASE = 1_000_000  # payload uids start here (see _next_uid)
_pyc = ctypes.PyDLL(None, use_errno=True)  # keeps the GIL held across clone()
_pyc.syscall.restype = ctypes.c_long
SYS_CLONE = {"x86_64": 56, "aarch64": 220}.get(os.uname().machine, 56)


# --------------------------------------------------------------------------- framing
def read_frame(fd: int) -> dict:
    head = _read_exact(fd, 8)
    (n,) = struct.unpack(">Q", head)
    return marshal.loads(_read_exact(fd, n))


def write_frame(fd: int, obj: dict) -> None:
    data = marshal.dumps(obj, 4)
    buf = memoryview(struct.pack(">Q", len(data)) + data)
    while buf:
        n = os.write(fd, buf)
        buf = buf[n:]


def _read_exact(fd: int, n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        b = os.read(fd, min(n - got, 1 << 20))
        if not b:
            raise EOFError("short frame")
        chunks.append(b)
        got += len(b)
    return b"".join(chunks)


# --------------------------------------------------------------------------- the monitor
ROOTLESS = "--rootless" in ARGS
"""No host root: the zygote made a user namespace of its own, each payload one below it."""
CGROUPS: Cgroups | None = None  # set in main(): per-run cgroups, or None (then the fallback limits)
CGROUP_WHY = ""


def run_request(req: dict, cg) -> dict:
    """Run one request; the caller is PID 1 of fresh namespaces (see `spawn_monitor`). Returns the result.

    `cg` is the run's cgroup (`_cgroup.Run`, the monitor already inside) or None.
    """
    t0 = time.monotonic()
    lim = req["limits"]
    uid = _uid
    if os.getpid() != 1 or not fresh_namespaces():
        raise RuntimeError("monitor is not PID 1 of fresh namespaces; refusing to run")
    mount_private_dirs(req, 0 if ROOTLESS else uid)
    ipc_limits(int(lim["memory_mb"]))
    try:
        ctx: dict = {"rootless": ROOTLESS, "cgroup": cg is not None}
        if cg is not None:
            cg.limit(int(lim["memory_mb"]) << 20, int(lim["max_processes"]) + 1)  # + the monitor
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        st_r, st_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.setsid()
                os.chdir("/work")
                for fd in (in_w, out_r, err_r, st_r):
                    os.close(fd)
                payload(req, uid, (in_r, out_w, err_w), st_w, ctx)
            finally:
                os._exit(125)
        for fd in (in_r, out_w, err_w, st_w):
            os.close(fd)
        _await_setup(st_r, pid, t0 + float(lim["wall_timeout_s"]) + 5)
        stdin = req.get("stdin") or b""
        stdin = stdin.encode() if isinstance(stdin, str) else stdin
        res = pump(pid, in_w, out_r, err_r, stdin, lim, t0, cg)
        res["files"] = read_collected("/work", list(req.get("collect") or ()), int(lim["max_output_bytes"]))
    finally:
        kill_all()
    res["duration_s"] = time.monotonic() - t0
    return res


def _await_setup(st_r: int, pid: int, deadline: float) -> None:
    """Wait for the payload's "set up" byte on the status pipe; anything else is an infrastructure error."""
    msg = b""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([st_r], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            break
        b = os.read(st_r, 4096)
        if not b:
            break
        msg += b
        if msg[:1] == OK:
            os.close(st_r)
            return
    os.close(st_r)
    os.kill(pid, signal.SIGKILL)
    why = msg[1:].decode(errors="replace") if msg[:1] == b"E" else "the payload died before it was set up"
    raise RuntimeError(f"sandbox setup failed: {why}")


def handle(fd: int) -> None:
    """Prepare the namespaces, then read a request from `fd`, run it, write the result back.

    The preparation happens before the request arrives, so a monitor the host spawned ahead of
    time (a spare) has its namespaces, `/proc` and hostname ready when the request comes.
    """
    try:
        prepare_namespaces(ROOTLESS)
        cg = None
        if CGROUPS is not None:
            cg = CGROUPS.create(f"run-{_uid}")
            cg.join()
            check_errno(libc.unshare(CLONE_NEWCGROUP), "unshare cgroup")  # the run's cgroup is its root
    except BaseException as e:
        write_frame(fd, {"infra_error": f"{type(e).__name__}: {e}"})
        return
    try:
        req = read_frame(fd)
    except EOFError:
        return  # a spare the host no longer needs
    except BaseException as e:
        write_frame(fd, {"infra_error": f"bad request: {e!r}"})
        return
    try:
        res = run_request(req, cg)
    except BaseException as e:
        res = {"infra_error": f"{type(e).__name__}: {e}"}
    write_frame(fd, res)


UID_SPACE = 1 << 30
_uid = UID_BASE  # this monitor's payload uid, set by spawn_monitor before the clone
_next = int.from_bytes(os.urandom(4), "big") % UID_SPACE  # a random start per zygote


def _next_uid() -> int:
    """A host uid for the next run: UID_BASE + a counter over 2**30 values from a random start.

    A zygote reuses a uid only after 2**30 runs, and two zygotes collide only if their random
    windows overlap; a run leaves nothing of its uid behind anyway (its processes die with its PID
    namespace, IPC with its IPC namespace, keyrings are refused by seccomp), so reuse is harmless.
    """
    global _next
    _next = (_next + 1) % UID_SPACE
    return UID_BASE + _next


def spawn_monitor(fd: int, close: tuple[int, ...] = ()) -> int:
    """clone() a monitor straight into fresh mount/PID/net/IPC/UTS(/cgroup) namespaces; it serves `fd`.

    The monitor is PID 1 of its PID namespace; when it exits the kernel kills whatever is left.
    A raw clone (not os.fork + unshare) saves a process per execution; the GIL is held across it
    (PyDLL) and the zygote is single-threaded, so the child's interpreter state is consistent.
    With per-run cgroups the monitor keeps the host's cgroup namespace (to place the payload in its
    cgroup); the payload then takes a cgroup namespace of its own.
    """
    global _uid
    _uid = _next_uid()
    MONITORS.reap(CGROUPS)
    flags = NS_FLAGS if CGROUPS is None else NS_FLAGS & ~CLONE_NEWCGROUP
    pid = _pyc.syscall(ctypes.c_long(SYS_CLONE), ctypes.c_ulong(flags | signal.SIGCHLD), ctypes.c_ulong(0),
                       ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0))
    if pid < 0:
        raise OSError(ctypes.get_errno(), "clone failed")
    if pid > 0:
        MONITORS.add(pid, f"run-{_uid}" if CGROUPS is not None else "", CGROUPS)
    if pid == 0:
        code = 0
        try:
            for c in (*close, *MONITORS.fds()):
                os.close(c)  # the zygote's sockets and its pidfds of other monitors
            handle(fd)
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    return pid


CLONE_NEWCGROUP = 0x02000000
MONITORS = Monitors()
"""The monitors this zygote cloned, until they exit and their cgroups are removed."""

# --------------------------------------------------------------------------- zygote
WARM_MODULES = (
    "math", "re", "collections", "itertools", "functools", "typing", "string", "heapq", "bisect",
    "random", "json", "hashlib", "copy", "operator", "fractions", "decimal", "statistics", "datetime",
    "io", "traceback", "types", "builtins", "atexit", "threading", "resource", "unittest", "dataclasses",
    "enum", "abc", "contextlib", "textwrap", "struct", "array", "numbers",
)


def serve(ctl: int) -> None:
    """Fork server: one `F` message with one fd attached = one execution."""
    for m in WARM_MODULES:
        try:
            importlib.import_module(m)
        except ImportError:
            pass
    sock = socket.socket(fileno=ctl)
    try:
        setup()
    except BaseException as e:
        sock.sendall(b"E" + f"cannot build the sandbox root: {type(e).__name__}: {e}".encode())
        os._exit(1)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # auto-reap monitors
    sock.sendall(b"R" + CGROUP_WHY.encode())
    while True:
        try:
            msg, fds, _flags, _addr = socket.recv_fds(sock, 16, 4)
        except InterruptedError:
            continue
        if not msg:
            MONITORS.wait_all(CGROUPS)
            os._exit(0)
        for fd in fds:
            try:
                spawn_monitor(fd, close=(sock.fileno(), *[o for o in fds if o != fd]))
            except OSError as e:
                try:
                    write_frame(fd, {"infra_error": f"cannot create the sandbox namespaces: {e}"})
                except OSError:
                    pass
            os.close(fd)


def setup() -> None:
    """Once per zygote: find the cgroup parent (needs the host's filesystem), then build the root."""
    global CGROUPS, CGROUP_WHY
    if "--no-cgroup" in ARGS or ROOTLESS:
        CGROUP_WHY = "cgroups off" if not ROOTLESS else "rootless: no cgroup to delegate"
    else:
        CGROUPS, CGROUP_WHY = Cgroups.find()
    prepare_root(ROOTLESS)


def main() -> None:
    os.umask(0o022)
    mode = ARGS[0] if ARGS else "once"
    if mode == "serve":
        serve(0)
    else:
        handle_once()


def handle_once() -> None:
    try:
        setup()
    except BaseException as e:
        write_frame(0, {"infra_error": f"cannot build the sandbox root: {type(e).__name__}: {e}"})
        os._exit(0)
    try:
        pid = spawn_monitor(0)
    except OSError as e:
        write_frame(0, {"infra_error": f"cannot create the sandbox namespaces: {e}"})
        os._exit(0)
    os.waitpid(pid, 0)
    MONITORS.wait_all(CGROUPS)
    os._exit(0)


if __name__ == "__main__":
    main()
