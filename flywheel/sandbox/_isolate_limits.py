"""Limits, for `_isolate.py` (the trusted half of the local sandbox): the payload's side and the monitor's.

Stdlib only: loaded by `_isolate.py` under the host's system interpreter, never imported into the venv.
`payload` is what the forked child does before it runs untrusted code: rlimits (CPU, address
space, processes, open files, file size, no core), a fresh unprivileged uid, no_new_privs, a clean
environment, then `main.py` in the already-warm interpreter. `pump` is the monitor's side: it feeds
stdin, caps the captured output, enforces the wall clock, kills every process of the namespace and
names the limit that ended the run.
"""

from __future__ import annotations

import os
import resource
import select
import signal
import sys
import time

from _isolate_ns import check_errno, libc

PR_SET_NO_NEW_PRIVS = 38


def payload(req: dict, uid: int, fds: tuple[int, int, int]) -> None:
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
        check_errno(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
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
    sys.path.insert(0, "/work")
    main = types.ModuleType("__main__")
    main.__dict__.update({"__file__": "/work/main.py", "__builtins__": builtins, "__cached__": None})
    sys.modules["__main__"] = main
    for name in list(sys.modules):
        if name.startswith("_isolate"):
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


def pump(pid: int, in_w: int, out_r: int, err_r: int, stdin: bytes, lim: dict, t0: float) -> dict:
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
        if exit_code == 125 and b"\x00FLYWHEEL_SETUP_ERROR" in stderr:
            raise RuntimeError(stderr.split(b"\x00FLYWHEEL_SETUP_ERROR", 1)[1].decode(errors="replace"))
        if killed is None and exit_code != 0 and b"MemoryError" in stderr[-4000:]:
            killed = "memory"
    if truncated:
        note = f"\n[flywheel sandbox: output truncated at {cap} bytes]\n".encode()
        stderr = stderr + note
    return {"exit_code": exit_code, "stdout": stdout, "stderr": stderr, "timed_out": killed == "wall_timeout",
            "killed_reason": killed, "truncated": truncated}
