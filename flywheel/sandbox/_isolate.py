"""The trusted half of the local sandbox: builds the namespaces, runs the code, enforces limits.

This file runs as a *script* under the host's system interpreter (`/usr/bin/python3 -I -S`), never
imported into the venv process, so it uses the standard library only. Two modes:

- `once`: read one request frame on stdin, run it, write one result frame on stdout, exit.
- `serve`: a fork server (zygote). It has already imported what untrusted code commonly needs;
  for every file descriptor it receives on its control socket (fd 0) it forks a *monitor* that
  reads the request from that descriptor, runs it and writes the result back there. The zygote
  never sees a request, so no task's data lingers in its memory for later children to read.

Per execution the monitor (still host root, trusted, never runs untrusted code):
1. `unshare`s a new mount, PID, network, IPC, UTS and cgroup namespace;
2. builds a root on a fresh tmpfs: `/usr` (and the interpreter's prefix) bound read-only, a
   private `/work` tmpfs holding the request's files, a private `/tmp` tmpfs, a minimal `/dev`
   and `/etc` (no passwd/shadow/resolv.conf/hosts), then makes that root read-only;
3. forks the *payload* process, PID 1 of the new PID namespace, which mounts its `/proc`,
   `pivot_root`s into the new root and detaches the host's, sets rlimits, drops to a fresh
   unprivileged uid/gid (unique per execution, so RLIMIT_NPROC is really enforced), sets
   no_new_privs, clears the environment and runs `main.py` in the already-warm interpreter;
4. pumps stdin/stdout/stderr with the wall-clock deadline and the output cap, SIGKILLs the payload
   (the kernel then kills every process of its PID namespace) when a limit is hit, and reads the
   `collect`ed files without following links.

Frames: 8-byte big-endian length + `marshal` (version 4) of a dict of plain types.

This file holds the protocol (frames, the zygote, the monitor's request cycle); the namespaces and
the filesystem are in `_isolate_ns.py`, the rlimits, the payload and the output pump in
`_isolate_limits.py`.
"""

from __future__ import annotations

import ctypes
import importlib
import marshal
import os
import signal
import socket
import struct
import sys
import time

# `-I` leaves this file's folder off sys.path: it is there only while the two halves load, so the
# payload's sys.path is what it would be without them (and `_run_main` drops them from sys.modules).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _isolate_limits import payload, pump  # noqa: E402
from _isolate_ns import (  # noqa: E402
    NS_FLAGS,
    fresh_namespaces,
    mount_private_dirs,
    prepare_namespaces,
    prepare_root,
    read_collected,
)

del sys.path[0]

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
def run_request(req: dict) -> dict:
    """Run one request; the caller is PID 1 of fresh namespaces (see `spawn_monitor`). Returns the result."""
    t0 = time.monotonic()
    lim = req["limits"]
    uid = _uid
    if os.getpid() != 1 or not fresh_namespaces():
        raise RuntimeError("monitor is not PID 1 of fresh namespaces; refusing to run")
    mount_private_dirs(req, uid)
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            os.chdir("/work")
            for fd in (in_w, out_r, err_r):
                os.close(fd)
            payload(req, uid, (in_r, out_w, err_w))
        finally:
            os._exit(125)
    for fd in (in_r, out_w, err_w):
        os.close(fd)
    stdin = req.get("stdin") or b""
    stdin = stdin.encode() if isinstance(stdin, str) else stdin
    res = pump(pid, in_w, out_r, err_r, stdin, lim, t0)
    res["files"] = read_collected("/work", list(req.get("collect") or ()), int(lim["max_output_bytes"]))
    res["duration_s"] = time.monotonic() - t0
    return res


def handle(fd: int) -> None:
    """Prepare the namespaces, then read a request from `fd`, run it, write the result back.

    The preparation happens before the request arrives, so a monitor the host spawned ahead of
    time (a spare) has its namespaces, `/proc` and hostname ready when the request comes.
    """
    try:
        prepare_namespaces()
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
        res = run_request(req)
    except BaseException as e:
        res = {"infra_error": f"{type(e).__name__}: {e}"}
    write_frame(fd, res)


_uid = UID_BASE  # this monitor's payload uid, set by spawn_monitor before the clone
_spawned = 0  # executions started by this zygote: with its pid, makes each payload uid unique


def _next_uid() -> int:
    """A host uid no other live execution uses: (zygote pid, counter) packed above UID_BASE."""
    global _spawned
    _spawned += 1
    return UID_BASE + ((os.getpid() & 0x7FFF) << 10) + (_spawned & 0x3FF)


def spawn_monitor(fd: int, close: tuple[int, ...] = ()) -> int:
    """clone() a monitor straight into fresh mount/PID/net/IPC/UTS/cgroup namespaces; it serves `fd`.

    The monitor is PID 1 of its PID namespace; when it exits the kernel kills whatever is left.
    A raw clone (not os.fork + unshare) saves a process per execution; the GIL is held across it
    (PyDLL) and the zygote is single-threaded, so the child's interpreter state is consistent.
    """
    global _uid
    _uid = _next_uid()
    pid = _pyc.syscall(ctypes.c_long(SYS_CLONE), ctypes.c_ulong(NS_FLAGS | signal.SIGCHLD), ctypes.c_ulong(0),
                       ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0))
    if pid < 0:
        raise OSError(ctypes.get_errno(), "clone failed")
    if pid == 0:
        code = 0
        try:
            for c in close:
                os.close(c)
            handle(fd)
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    return pid


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
        prepare_root()
    except BaseException as e:
        sock.sendall(b"E" + f"cannot build the sandbox root: {type(e).__name__}: {e}".encode())
        os._exit(1)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # auto-reap monitors
    sock.sendall(b"R")
    while True:
        try:
            msg, fds, _flags, _addr = socket.recv_fds(sock, 16, 4)
        except InterruptedError:
            continue
        if not msg:
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


def main() -> None:
    os.umask(0o022)
    mode = sys.argv[1] if len(sys.argv) > 1 else "once"
    if mode == "serve":
        serve(0)
    else:
        handle_once()


def handle_once() -> None:
    try:
        prepare_root()
    except BaseException as e:
        write_frame(0, {"infra_error": f"cannot build the sandbox root: {type(e).__name__}: {e}"})
        os._exit(0)
    try:
        pid = spawn_monitor(0)
    except OSError as e:
        write_frame(0, {"infra_error": f"cannot create the sandbox namespaces: {e}"})
        os._exit(0)
    os.waitpid(pid, 0)
    os._exit(0)


if __name__ == "__main__":
    main()
