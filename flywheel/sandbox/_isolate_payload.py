"""The payload's side of the local sandbox: what the forked child does before it runs untrusted code.

Stdlib only: loaded by `_isolate.py` under the host's system interpreter, never imported into the venv.
Born in its run's cgroup (the monitor joined it). In order: rlimits (CPU, address space, processes,
open files, file size, message queues, no core), a fresh identity (root mode: a fresh host uid;
rootless: a user namespace of its own, every capability dropped), no_new_privs, the seccomp filter
(`_seccomp.py`), a clean environment; then it reports "set up" on the status pipe, closes it, and
runs `main.py` in the already-warm interpreter.

The status pipe is the only way the payload can say "the sandbox failed" (an infrastructure error).
It is closed before the first line of untrusted code runs, so nothing the program prints, writes or
exits with can claim to be the sandbox's own failure.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import resource
import signal
import sys

from _isolate_ns import check_errno, libc
from _seccomp import install as install_seccomp

PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP, PR_SET_SECUREBITS = 38, 24, 28
SECBITS_LOCKED_NOROOT = 0x2F  # NOROOT, NO_SETUID_FIXUP and KEEP_CAPS, each locked
CLONE_NEWUSER = 0x10000000
ROOTLESS_UID = 1000
"""The payload's uid inside its own user namespace in rootless mode (mapped to the host user)."""
STATUS_FD = 3
OK = b"\x01"


def payload(req: dict, uid: int, fds: tuple[int, int, int], status_w: int, ctx: dict) -> None:
    """The untrusted side: limits, a fresh identity, seccomp, then the code. Never returns."""
    lim = req["limits"]
    chan = status_w
    try:
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (*fds, status_w)]  # none is clobbered below
        for i, fd in enumerate(high[:3]):
            os.dup2(fd, i)
        os.dup2(high[3], STATUS_FD)
        chan = STATUS_FD
        os.closerange(STATUS_FD + 1, 65536)
        for fd in (0, 1, 2, STATUS_FD):
            os.set_inheritable(fd, fd != STATUS_FD)
        _set_oom_score()

        def rl(which: int, soft: int, hard: int | None = None) -> None:
            resource.setrlimit(which, (soft, soft if hard is None else hard))

        cpu = max(1, int(-(-float(lim["cpu_time_s"]) // 1)))
        rl(resource.RLIMIT_CPU, cpu, cpu + 1)
        rl(resource.RLIMIT_AS, int(lim["memory_mb"]) << 20)
        rl(resource.RLIMIT_NOFILE, int(lim["max_open_files"]))
        rl(resource.RLIMIT_FSIZE, int(lim["max_file_size_mb"]) << 20)
        rl(resource.RLIMIT_CORE, 0)
        rl(resource.RLIMIT_MSGQUEUE, 512 << 10)
        for sig in range(1, signal.NSIG):
            if sig not in (signal.SIGKILL, signal.SIGSTOP):
                try:
                    signal.signal(sig, signal.SIG_DFL)
                except (OSError, ValueError):
                    pass
        signal.signal(signal.SIGINT, signal.default_int_handler)  # as a fresh `python main.py` has it
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
        if ctx.get("rootless"):
            _own_user_namespace()
            rl(resource.RLIMIT_NPROC, int(lim["max_processes"]))  # counted per user namespace
            _drop_capabilities()
        else:
            rl(resource.RLIMIT_NPROC, int(lim["max_processes"]))
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
        check_errno(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
        install_seccomp(libc, deny_memfd=not ctx.get("cgroup"))
        os.environ.clear()
        os.environ.update({"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/work", "LANG": "C.UTF-8",
                           "TMPDIR": "/tmp", "PYTHONDONTWRITEBYTECODE": "1"})
        for k, v in (req.get("env") or {}).items():
            os.environ[str(k)] = str(v)
        os.write(STATUS_FD, OK)
    except BaseException as e:  # setup failed: an infrastructure error, said on the status pipe only
        try:
            os.write(chan, f"E{e!r}".encode()[:4000])
        finally:
            os._exit(125)
    os.close(STATUS_FD)  # from here on the program has no channel that could speak for the sandbox
    _run_main(req)


def _set_oom_score() -> None:
    """The monitor shields itself from the OOM killer; its payload must not inherit that."""
    try:
        fd = os.open("/proc/self/oom_score_adj", os.O_WRONLY)
        try:
            os.write(fd, b"0")
        finally:
            os.close(fd)
    except OSError:
        pass


def _own_user_namespace() -> None:
    """Rootless: a user namespace per run, mapping ROOTLESS_UID to our (the host user's) uid.

    Its ucounts make RLIMIT_NPROC count this run's processes only, its keyrings die with it.
    """
    check_errno(libc.unshare(CLONE_NEWUSER), "unshare user")
    for name, text in (("setgroups", "deny"), ("uid_map", f"{ROOTLESS_UID} 0 1"), ("gid_map", f"{ROOTLESS_UID} 0 1")):
        fd = os.open(f"/proc/self/{name}", os.O_WRONLY)
        try:
            os.write(fd, text.encode())
        finally:
            os.close(fd)
    os.setresgid(ROOTLESS_UID, ROOTLESS_UID, ROOTLESS_UID)
    os.setresuid(ROOTLESS_UID, ROOTLESS_UID, ROOTLESS_UID)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _drop_capabilities() -> None:
    """Rootless: the namespace's creator holds every capability in it; drop them all, for good."""
    check_errno(libc.prctl(PR_SET_SECUREBITS, SECBITS_LOCKED_NOROOT, 0, 0, 0), "securebits")
    last = 40
    try:
        with open("/proc/sys/kernel/cap_last_cap") as f:
            last = int(f.read())
    except OSError:
        pass
    for cap in range(last + 1):
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
    hdr = _CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (_CapData * 2)()
    check_errno(libc.capset(ctypes.byref(hdr), data), "capset")


def _run_main(req: dict) -> None:
    """Run /work/main.py as `__main__` in this (pre-warmed) interpreter, then exit like python would."""
    import builtins  # the payload's own imports: the monitor never needs them
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
    sys.orig_argv = [sys.executable, *argv]
    sys.path.insert(0, "/work")
    main = types.ModuleType("__main__")
    main.__dict__.update({"__file__": "/work/main.py", "__builtins__": builtins, "__cached__": None})
    sys.modules["__main__"] = main
    for name in list(sys.modules):
        if name.startswith(("_isolate", "_seccomp", "_cgroup")):
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
        # only a payload that reaches here pays for them: the sandboxed program's start stays small
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
