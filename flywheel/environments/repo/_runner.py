# ruff: noqa: UP031  (runs under whatever Python the sandbox has: plain %-formatting on purpose)
"""The repo environment's trusted test runner: runs as `main.py` inside the sandbox (standard library only).

It runs the test files itself and the repository's code in another process, and prints one line
`<nonce> {json}` with each test's outcome. Why it is shaped like this:
* The work dir is the candidate's: it leaves `sys.path` before anything else is imported, so a
  repository file named `subprocess.py` or `unittest.py` is never this process's module.
* The test sources, a per-run random nonce and the call protocol's source arrive over stdin
  (hidden tests never touch the disk); this process makes itself non-dumpable first, so same-uid
  processes cannot read its memory or open its descriptors through /proc.
* The repository's code runs in a fresh interpreter (new session) that serves calls over two pipes (the
  code judge's protocol, `_harness_rpc.py`, with object references added by `_remote.py`). It looks
  like any program the sandbox runs (`tests/environments/repo/test_runner_view.py` compares them): the
  sandbox's own environment, flags and `sys.path`, `sys.argv` `["main.py"]`, `/proc/self/cmdline` `init`
  (its program is read from a pipe: no source or descriptor numbers on its command line), the
  interpreter's default limits, stdout/stderr a pipe (this process keeps the tail), and a work dir holding
  the repository's files only (`main.py`, this file, is unlinked once it runs). What still differs: two
  more pipes open, the protocol's modules loaded, one more process (this one) in the sandbox. A test's
  `import stack` here is a module whose attributes are round trips; values come back rebuilt as
  built-in types. So nothing the candidate does in its process reaches the tests: an `__eq__` that
  is always true, `unittest` asserts nulled at import, a profile hook swapping test code, a fake
  "PASSED" line, `sys.exit(0)` or `os._exit(0)` at import change nothing here; the candidate has no
  descriptor of this process's stdout and does not know the nonce, so it cannot write the report.
"""

import sys  # noqa: I001 - first, and the work dir out of the path before any other import

if __name__ == "__main__":  # as the sandbox's main.py (importing this file in a test changes nothing)
    _WORK = __file__.rsplit("/", 1)[0] if "/" in __file__ else ""
    sys.path[:] = [p for p in sys.path if p not in ("", ".", _WORK) and not (_WORK and p.startswith(_WORK + "/"))]

import ctypes  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import linecache  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
import types  # noqa: E402


def _nondumpable():
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0) == 0  # PR_SET_DUMPABLE = 4
    except Exception:
        return False


def _shrug(signum, frame):
    """The candidate shares our uid and can signal us: catchable signals change nothing."""


OUT_FD, NONCE, DEADLINE, TAIL = 1, "", 0.0, 2000  # set by main(), before anything else runs
MAX_FRAMES = 20000
RPC = {"__name__": "_repo_rpc"}  # the call protocol, compiled from stdin by main()


def say(text):
    line = ("\n%s%s\n" % (NONCE, text)).encode()
    while line:
        line = line[os.write(OUT_FD, line):]


def why(e, path):
    tb = traceback.extract_tb(e.__traceback__)
    at = next((f for f in reversed(tb) if f.filename == path), None)
    where = " (%s line %d: %s)" % (path, at.lineno, (at.line or "").strip()[:160]) if at else ""
    return ("%s: %s" % (type(e).__name__, str(e)[:300])) + where


_BOOT = """import sys
sys.argv, sys.orig_argv = ["main.py"], [sys.executable, "main.py"]
__file__ = "/work/main.py"
def _neutral():
    import ctypes
    with open("/proc/self/stat", "rb") as f:
        rest = f.read().rpartition(b")")[2].split()
    start, end = int(rest[45]), int(rest[46])
    if end > start:
        ctypes.memset(start, 0, end - start)
        ctypes.memmove(start, b"init", min(4, end - start - 1))
try:
    _neutral()
except Exception:
    pass
del _neutral
exec(compile(%r, "<stdin>", "exec"))
serve_repository(%d, %d)
"""
"""The candidate's program, read by an isolated `python3` from its stdin. It then looks like any program the
sandbox runs (`sys.argv` `["main.py"]`, `/proc/self/cmdline` `init`, the same flags, path and environment),
and the work dir joins its path only once the call protocol has imported what it needs."""


def _start_candidate(work):
    r_req, w_req = os.pipe()
    r_rep, w_rep = os.pipe()
    r_out, w_out = os.pipe()
    r_err, w_err = os.pipe()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONHASHSEED"}
    argv = [sys.executable, "-I", "-S", "-B", "-"]
    try:  # its argv area as long as this process's (which the sandbox started like any program)
        pad = len(open("/proc/self/cmdline", "rb").read()) - len("\0".join(argv)) - 2
    except OSError:
        pad = 0
    proc = subprocess.Popen(
        argv + (["x" * pad] if pad > 0 else []), pass_fds=(r_req, w_rep), stdin=subprocess.PIPE, stdout=w_out, stderr=w_err,
        env=env, cwd=work, start_new_session=True, close_fds=True,
    )
    for fd in (r_req, w_rep, w_out, w_err):
        os.close(fd)
    tail = _Tail((r_out, r_err))
    try:
        proc.stdin.write((_BOOT % (RPC["__source__"], r_req, w_rep)).encode())
        proc.stdin.close()
    except OSError:
        pass  # it died reading its program: the hello never comes, a disruption the caller reports
    return proc, r_rep, w_req, tail


class _Tail:
    """The candidate's stdout and stderr, each drained by a thread (it can never block on a full pipe), into
    one buffer of their last `TAIL` bytes."""

    def __init__(self, fds):
        self.buf, self.lock = b"", threading.Lock()
        self.threads = [threading.Thread(target=self._drain, args=(fd,), daemon=True) for fd in fds]
        for t in self.threads:
            t.start()

    def _drain(self, fd):
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                return
            if not chunk:
                return
            with self.lock:
                self.buf = (self.buf + chunk)[-TAIL:]

    def text(self):
        for t in self.threads:  # its writers are gone once it is killed: EOF soon
            t.join(timeout=1.0)
        with self.lock:
            return self.buf[-TAIL:].decode("utf-8", "replace")


def _cases(mod):
    out = []
    for k, v in list(mod.__dict__.items()):
        if k.startswith("test") and isinstance(v, types.FunctionType):
            out.append((k, v))
        elif isinstance(v, type) and k.startswith("Test") and "unittest" in sys.modules and issubclass(
                v, sys.modules["unittest"].TestCase):
            out += [("%s.%s" % (k, m), (v, m)) for m in sorted(dir(v))
                    if m.startswith("test") and callable(getattr(v, m, None))]
    return out


def _run_case(fn):
    """None when the test passed, else why not."""
    if isinstance(fn, tuple):
        res = sys.modules["unittest"].TestResult()
        fn[0](fn[1]).run(res)
        bad = res.errors + res.failures
        return bad[0][1].strip().splitlines()[-1][:400] if bad else None
    fn()
    return None


def run_tests(tests, peer, frames):
    """Each test file as its own module in this process, its repository imports served by the candidate."""
    for path, src in tests:
        linecache.cache[path] = (len(src), None, src.splitlines(True), path)
    for path, src in tests:
        name = os.path.splitext(os.path.basename(path))[0]
        mod = types.ModuleType(name)
        mod.__file__ = path
        sys.modules[name] = mod
        try:
            exec(compile(src, path, "exec"), mod.__dict__)
        except BaseException as e:
            frames.append({"f": path, "load_error": peer.fatal or why(e, path)})
            continue
        for label, fn in _cases(mod):
            if len(frames) >= MAX_FRAMES:
                return
            try:
                err = _run_case(fn) if not peer.fatal else peer.fatal
            except BaseException as e:
                err = peer.fatal or why(e, path)
            frames.append({"f": path, "t": label, "ok": err is None} if err is None
                          else {"f": path, "t": label, "ok": False, "err": str(err)[:400]})


def _stop(proc):
    """Kill the candidate and everything it started (as PID 1 of the sandbox's PID namespace, all of them)."""
    for target in ((-1,) if os.getpid() <= 2 else ()) + (-proc.pid,):
        try:
            os.kill(target, signal.SIGKILL)
        except OSError:
            pass
    try:
        proc.wait(timeout=2)
    except Exception:
        pass


def run_all(tests):
    """Start the candidate, run the test files here against it; what they did, its exit and output tail."""
    Peer, Broken, finder = RPC["RepoPeer"], RPC["Broken"], RPC["RemoteFinder"]
    rep = {"status": "ok", "frames": [], "exit": None, "output": "", "timeout": False}
    work = os.getcwd()
    proc, rfd, wfd, tail = _start_candidate(work)
    timeout_text = "timed out: the tests did not finish within the time limit"
    peer = Peer(rfd, wfd, deadline=DEADLINE, nan_ok=True, strict=True, timeout_text=timeout_text)
    saved = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = io.StringIO()  # what tests print is theirs, not this process's report
    hook = finder(peer, work)
    try:
        hello = peer.recv()
        if type(hello) is not dict or not hello.get("ready"):
            raise Broken("the repository process did not start")
        sys.meta_path.insert(0, hook)
        run_tests(tests, peer, rep["frames"])
    except Broken:
        pass
    finally:
        if hook in sys.meta_path:
            sys.meta_path.remove(hook)
        sys.stdout, sys.stderr = saved
        rep["timeout"] = peer.fatal == timeout_text
        if peer.fatal:
            done = {(f.get("f"), f.get("t")) for f in rep["frames"]}
            rep["frames"] += [{"f": p, "load_error": peer.fatal} for p, _ in tests
                              if not any(d[0] == p for d in done)]
        try:
            peer.deadline = time.monotonic() + 0.5
            peer.send({"op": "exit"})
        except Exception:
            pass
        _stop(proc)
        rep["exit"] = proc.returncode
        rep["output"] = tail.text()
    rep["frames"].append({"end": True})
    return rep


def main():
    global OUT_FD, NONCE, DEADLINE, TAIL
    dumpable_off = _nondumpable()  # before anything secret is in memory
    OUT_FD = os.dup(1)
    for name in ("SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGALRM", "SIGPIPE"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), _shrug)
    cfg = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    sys.stdin.close()
    try:  # the work dir holds the repository's files only (this source stays in memory)
        os.unlink(os.path.join(os.getcwd(), "main.py"))
    except OSError:
        pass
    NONCE = cfg.pop("nonce")
    DEADLINE = time.monotonic() + float(cfg["timeout_s"])
    TAIL = int(cfg.get("output_tail", 2000))
    started = False
    try:
        RPC["__source__"] = cfg.pop("rpc_source")
        exec(compile(RPC["__source__"], "_repo_rpc.py", "exec"), RPC)
        say("-started")  # from here the repository's code runs: a missing verdict is its failure
        started = True
        result = run_all(cfg["tests"])
        result["dumpable_off"] = dumpable_off
    except BaseException as e:
        why_ = "%s: %s" % (type(e).__name__, e)
        result = {"status": "disrupted" if started else "harness_error", "reason": why_[:300]}
    try:
        text = json.dumps(result)
    except (TypeError, ValueError) as e:
        text = json.dumps({"status": "disrupted", "reason": "result not serialisable: %s" % e})
    say(" " + text)
    os._exit(0)


if __name__ == "__main__":  # as the sandbox's main.py; importing it (tests walk the package) does nothing
    main()
