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
"""

from __future__ import annotations

import ctypes
import marshal
import os
import resource
import select
import signal
import socket
import stat
import struct
import sys
import time

CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MNT_DETACH = 2
PR_SET_NO_NEW_PRIVS = 38
UID_BASE = 1_000_000  # payload uids start here (see _next_uid)
STAGE = "/tmp"  # where the template root is built (in the private mount ns) before pivot_root
DEV_NODES = ("null", "zero", "full", "random", "urandom")
ETC_FILES = ("ld.so.cache", "localtime")

_libc = ctypes.CDLL(None, use_errno=True)
_pyc = ctypes.PyDLL(None, use_errno=True)  # keeps the GIL held across clone()
_pyc.syscall.restype = ctypes.c_long
SYS_CLONE, SYS_PIVOT_ROOT = {"x86_64": (56, 155), "aarch64": (220, 41)}.get(os.uname().machine, (56, 155))
NS_FLAGS = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP


def _check(ret: int, what: str) -> None:
    if ret != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"{what}: {os.strerror(e)}")


def _mount(src: str | None, dst: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    def enc(s):
        return (s.encode() if s is not None else None)
    _check(_libc.mount(enc(src), enc(dst), enc(fstype), ctypes.c_ulong(flags), enc(data)), f"mount {dst}")


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


# --------------------------------------------------------------------------- building the root
def _prefixes() -> list[str]:
    """Host directories bound read-only: /usr, plus the interpreter's prefix when it lives elsewhere."""
    out = ["/usr"]
    for p in {os.path.realpath(sys.base_prefix), os.path.realpath(sys.base_exec_prefix)}:
        if not p.startswith("/usr/") and p != "/usr" and p not in out:
            out.append(p)
    return out


def _mkdirs(path: str) -> None:
    os.makedirs(path, mode=0o755, exist_ok=True)


def prepare_root() -> None:
    """Once per zygote (or one-shot process): move this process into a private mount namespace whose
    whole filesystem is the sandbox template, and detach the host's.

    Template: a tmpfs `/` (read-only once built) with `/usr` (and the interpreter's prefix) bound
    read-only, a minimal `/dev` and `/etc`, and empty mount points `/work`, `/tmp`, `/proc` that
    every execution fills with its own tmpfs/procfs. Per-execution mount namespaces are copies of
    this small tree, so building one costs three mounts, not a walk over the host's mount table.
    """
    _check(_libc.unshare(CLONE_NEWNS), "unshare mnt")
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    _mount("tmpfs", STAGE, "tmpfs", MS_NOSUID | MS_NODEV, "size=4m,nr_inodes=4096,mode=755")
    for d in ("work", "tmp", "proc", "dev", "etc"):
        os.mkdir(f"{STAGE}/{d}", 0o755)
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        host = f"/{name}"
        if os.path.islink(host):
            os.symlink(os.readlink(host), f"{STAGE}/{name}")
        elif os.path.isdir(host):
            _bind_ro(host, f"{STAGE}/{name}")
    for p in _prefixes():
        _bind_ro(p, STAGE + p)
    _mount("tmpfs", f"{STAGE}/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "size=64k,mode=755")
    for node in DEV_NODES:
        if os.path.exists(f"/dev/{node}"):
            open(f"{STAGE}/dev/{node}", "w").close()
            _mount(f"/dev/{node}", f"{STAGE}/dev/{node}", None, MS_BIND)
    for i, name in enumerate(("stdin", "stdout", "stderr")):
        os.symlink(f"/proc/self/fd/{i}", f"{STAGE}/dev/{name}")
    os.symlink("/proc/self/fd", f"{STAGE}/dev/fd")
    _mount(None, f"{STAGE}/dev", None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NOEXEC)
    for name in ETC_FILES:
        src = f"/etc/{name}"
        if os.path.isfile(src):
            with open(src, "rb") as f, open(f"{STAGE}/etc/{name}", "wb") as g:
                g.write(f.read())
    _mount(None, STAGE, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    os.chdir(STAGE)
    _check(_libc.syscall(SYS_PIVOT_ROOT, b".", b"."), "pivot_root")  # SYS_pivot_root on x86_64
    _check(_libc.umount2(b".", MNT_DETACH), "umount old root")
    os.chdir("/")


def _bind_ro(src: str, dst: str) -> None:
    os.makedirs(dst, mode=0o755, exist_ok=True)
    _mount(src, dst, None, MS_BIND | MS_REC)
    _mount(None, dst, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


def _mount_private_dirs(req: dict, uid: int) -> None:
    """Per execution, in its own mount namespace: fresh tmpfs `/work` (with the files) and `/tmp`."""
    disk = max(1, int(req["limits"]["max_disk_mb"]))
    opts = f"size={disk}m,nr_inodes=16384,uid={uid},gid={uid}"
    _mount("tmpfs", "/work", "tmpfs", MS_NOSUID | MS_NODEV, opts + ",mode=755")
    _mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, opts + ",mode=1777")
    _write_files("/work", req, uid)


def _write_files(work: str, req: dict, uid: int) -> None:
    files = dict(req.get("files") or {})
    files["main.py"] = req["code"].encode() if isinstance(req["code"], str) else req["code"]
    for name, data in files.items():
        rel = os.path.normpath(name)
        if rel.startswith(("/", "..")) or rel in (".", ""):
            raise ValueError(f"file name outside the work dir: {name!r}")
        path = os.path.join(work, rel)
        parent = os.path.dirname(path)
        if parent != work:
            _mkdirs(parent)
            d = parent
            while d != work:
                os.chown(d, uid, uid)
                d = os.path.dirname(d)
        with open(path, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
        os.chown(path, uid, uid)
    os.chown(work, uid, uid)


def _read_collected(work: str, names: list, cap: int) -> dict:
    """Read files the payload left in /work without following links (it could plant a symlink)."""
    out = {}
    for name in names:
        rel = os.path.normpath(name)
        if rel.startswith(("/", "..")):
            continue
        parts = rel.split("/")
        try:
            fd = os.open(work, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
            try:
                for p in parts[:-1]:
                    nfd = os.open(p, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                    os.close(fd)
                    fd = nfd
                ffd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
            finally:
                os.close(fd)
            try:
                if not stat.S_ISREG(os.fstat(ffd).st_mode):
                    continue
                out[name] = os.read(ffd, cap)
            finally:
                os.close(ffd)
        except OSError:
            continue
    return out


# --------------------------------------------------------------------------- payload
def _payload(req: dict, uid: int, fds: tuple[int, int, int]) -> None:
    """The untrusted side: limits, a fresh uid, then the code. Never returns."""
    lim = req["limits"]
    try:
        for i, fd in enumerate(fds):
            os.dup2(fd, i)
        os.closerange(3, 65536)

        def rl(which: int, soft: int, hard: int | None = None) -> None:
            resource.setrlimit(which, (soft, soft if hard is None else hard))

        cpu = max(1, int(-(-float(lim["cpu_time_s"]) // 1)))
        rl(resource.RLIMIT_CPU, cpu, cpu + 1)
        rl(resource.RLIMIT_AS, int(lim["memory_mb"]) << 20)
        rl(resource.RLIMIT_NPROC, int(lim["max_processes"]))
        rl(resource.RLIMIT_NOFILE, int(lim["max_open_files"]))
        rl(resource.RLIMIT_FSIZE, int(lim["max_file_size_mb"]) << 20)
        rl(resource.RLIMIT_CORE, 0)
        for sig in (signal.SIGXFSZ, signal.SIGXCPU, signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
        _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
        os.environ.clear()
        os.environ.update({"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/work", "LANG": "C.UTF-8",
                           "TMPDIR": "/tmp", "PYTHONDONTWRITEBYTECODE": "1"})
        for k, v in (req.get("env") or {}).items():
            os.environ[str(k)] = str(v)
    except BaseException as e:  # setup failed: tell the monitor it is an infrastructure error
        try:
            os.write(2, f"\x00FLYWHEEL_SETUP_ERROR {e!r}".encode())
        finally:
            os._exit(125)
    _run_main(req)


def _run_main(req: dict) -> None:
    """Run /work/main.py as `__main__` in this (pre-warmed) interpreter, then exit like python would."""
    import builtins
    import io
    import traceback
    import types

    code_text = req["code"]
    argv = ["main.py", *[str(a) for a in (req.get("argv") or ())]]
    del req
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8", errors="surrogateescape")
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", errors="backslashreplace",
                                  line_buffering=False, write_through=False)
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8", errors="backslashreplace",
                                  line_buffering=True)
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr
    sys.argv = argv
    sys.path.insert(0, "/work")
    main = types.ModuleType("__main__")
    main.__dict__.update({"__file__": "/work/main.py", "__builtins__": builtins, "__cached__": None})
    sys.modules["__main__"] = main
    for name in list(sys.modules):
        if name.startswith("_flywheel_isolate"):
            del sys.modules[name]
    code = 0
    try:
        exec(compile(code_text, "/work/main.py", "exec"), main.__dict__)
    except SystemExit as e:
        c = e.code
        if c is None:
            code = 0
        elif isinstance(c, int):
            code = c & 0xFF
        else:
            try:
                print(c, file=sys.stderr)
            except BaseException:
                pass
            code = 1
    except BaseException as e:
        try:  # the traceback starts at the user's code, not this runner
            traceback.print_exception(type(e), e, e.__traceback__.tb_next if e.__traceback__ else None)
        except BaseException:
            pass
        code = 1
    try:
        import atexit
        import threading

        threading._shutdown()  # join non-daemon threads, as interpreter exit does
        atexit._run_exitfuncs()
    except BaseException:
        pass
    for s in (sys.stdout, sys.stderr):
        try:
            s.flush()
        except BaseException:
            pass
    os._exit(code)


# --------------------------------------------------------------------------- the monitor
def run_request(req: dict) -> dict:
    """Run one request; the caller is PID 1 of fresh namespaces (see `spawn_monitor`). Returns the result."""
    t0 = time.monotonic()
    lim = req["limits"]
    uid = _uid
    if os.getpid() != 1 or not _fresh_namespaces():
        raise RuntimeError("monitor is not PID 1 of fresh namespaces; refusing to run")
    _mount_private_dirs(req, uid)
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
            _payload(req, uid, (in_r, out_w, err_w))
        finally:
            os._exit(125)
    for fd in (in_r, out_w, err_w):
        os.close(fd)
    stdin = req.get("stdin") or b""
    stdin = stdin.encode() if isinstance(stdin, str) else stdin
    res = _pump(pid, in_w, out_r, err_r, stdin, lim, t0)
    res["files"] = _read_collected("/work", list(req.get("collect") or ()), int(lim["max_output_bytes"]))
    res["duration_s"] = time.monotonic() - t0
    return res


def prepare_namespaces() -> None:
    """In a freshly cloned monitor: its own /proc and hostname. Only ever inside fresh namespaces."""
    if os.getpid() != 1 or not _fresh_namespaces():
        # sethostname and, later, SIGKILL to -1 are only safe inside fresh namespaces
        raise RuntimeError("monitor is not PID 1 of fresh namespaces; refusing to run")
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    socket.sethostname("sandbox")


def _kill_all() -> None:
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


def _pump(pid: int, in_w: int, out_r: int, err_r: int, stdin: bytes, lim: dict, t0: float) -> dict:
    """Feed stdin, capture output up to the cap, enforce the wall clock; reap the payload and its leftovers."""
    cap = int(lim["max_output_bytes"])
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
            timeout_ms = max(0, int((deadline - time.monotonic()) * 1000))
            if timeout_ms == 0:
                killed = "wall_timeout"
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
                _kill_all()  # background processes die with the payload; their pipe ends close
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
    _kill_all()
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
        if exit_code == 125 and b"\x00FLYWHEEL_SETUP_ERROR" in stderr:
            raise RuntimeError(stderr.split(b"\x00FLYWHEEL_SETUP_ERROR", 1)[1].decode(errors="replace"))
        if killed is None and exit_code != 0 and b"MemoryError" in stderr[-4000:]:
            killed = "memory"
    if truncated:
        note = f"\n[flywheel sandbox: output truncated at {cap} bytes]\n".encode()
        stderr = stderr + note
    return {"exit_code": exit_code, "stdout": stdout, "stderr": stderr, "timed_out": killed == "wall_timeout",
            "killed_reason": killed, "truncated": truncated}


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


_uid = UID_BASE
def _fresh_namespaces() -> bool:
    """The flags this monitor was cloned with include new PID, UTS, network and mount namespaces."""
    need = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWUTS | CLONE_NEWIPC
    return NS_FLAGS & need == need


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
    import importlib

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
