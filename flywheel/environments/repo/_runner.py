# ruff: noqa: UP031  (runs under whatever Python the sandbox has: plain %-formatting on purpose)
"""The repo environment's trusted test runner: runs as `main.py` inside the sandbox (standard library only).

It runs test files against the repository in the work dir, in one child process (each test file
its own module, like pytest), and prints one line `<nonce> {json}` with what the child reported. Why it is shaped like this:
* The test sources arrive over stdin (hidden tests never touch the disk), with a per-run random
  nonce; this process makes itself non-dumpable first, so same-uid processes cannot read its memory
  or open its descriptors through /proc.
* Each child is a fresh interpreter (`-I -S -B`, new session, empty environment, stdin from
  /dev/null, stdout/stderr to a log file). It reads its test source from a pipe, then imports the
  repository's code; what that code prints, a fake "PASSED" line, a `sys.exit(0)` or `os._exit(0)`
  at import, cannot reach this process's stdout: an exit before the end frame leaves tests
  unreported, and unreported tests fail.
* The candidate shares the child's process with the tests: a program written to attack this
  runner (walking frames to the report pipe) could forge frames. The verifier outside checks that
  every test it expects from the pristine sources is reported exactly once, so naive forgeries
  (extra, duplicate or early frames) fail; a deliberate reverse-engineered forgery is out of scope.
"""

import ctypes
import json
import os
import select
import signal
import struct
import subprocess
import sys
import time


def _nondumpable():
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0) == 0  # PR_SET_DUMPABLE = 4
    except Exception:
        return False


def _shrug(signum, frame):
    """Children share our uid and can signal us: catchable signals change nothing."""


MAX_FRAME = 1 << 20
MAX_REPORT = 256 << 10  # all frames together: the result line must fit under the sandbox's output cap
OUT_FD, NONCE, DEADLINE, TAIL = 1, "", 0.0, 2000  # set by main(), before anything else runs

CHILD = r'''
import json, linecache, os, struct, sys, traceback, types
RFD, WFD = int(sys.argv[1]), int(sys.argv[2])
def _read(n):
    b = b""
    while len(b) < n:
        c = os.read(RFD, n - len(b))
        if not c:
            os._exit(3)
        b += c
    return b
(n,) = struct.unpack(">I", _read(4))
FILES = json.loads(_read(n).decode("utf-8"))
os.close(RFD)
def wr(obj):
    d = json.dumps(obj).encode()
    d = struct.pack(">I", len(d)) + d
    while d:
        d = d[os.write(WFD, d):]
def why(e, path):
    tb = traceback.extract_tb(e.__traceback__)
    at = next((f for f in reversed(tb) if f.filename == path), None)
    where = " (%s line %d: %s)" % (path, at.lineno, (at.line or "").strip()[:160]) if at else ""
    return ("%s: %s" % (type(e).__name__, str(e)[:300])) + where
for path, src in FILES:
    linecache.cache[path] = (len(src), None, src.splitlines(True), path)
if any("unittest" in src for _, src in FILES):
    import unittest
sys.path.insert(0, os.getcwd())
for path, src in FILES:
    name = os.path.splitext(os.path.basename(path))[0]
    mod = types.ModuleType(name)
    mod.__file__ = path
    sys.modules[name] = mod
    try:
        exec(compile(src, path, "exec"), mod.__dict__)
    except BaseException as e:
        wr({"f": path, "load_error": why(e, path)})
        continue
    cases = []
    for k, v in list(mod.__dict__.items()):
        if k.startswith("test") and isinstance(v, types.FunctionType):
            cases.append((k, v))
        elif isinstance(v, type) and k.startswith("Test") and "unittest" in sys.modules and issubclass(v, sys.modules["unittest"].TestCase):
            for m in sorted(dir(v)):
                if m.startswith("test") and callable(getattr(v, m, None)):
                    cases.append(("%s.%s" % (k, m), (v, m)))
    for label, fn in cases:
        try:
            if isinstance(fn, tuple):
                res = sys.modules["unittest"].TestResult()
                fn[0](fn[1]).run(res)
                bad = res.errors + res.failures
                if bad:
                    wr({"f": path, "t": label, "ok": False, "err": bad[0][1].strip().splitlines()[-1][:400]})
                    continue
            else:
                fn()
            wr({"f": path, "t": label, "ok": True})
        except BaseException as e:
            wr({"f": path, "t": label, "ok": False, "err": why(e, path)})
wr({"end": True})
os._exit(0)
'''


def say(text):
    line = ("\n%s%s\n" % (NONCE, text)).encode()
    while line:
        line = line[os.write(OUT_FD, line):]


def run_all(tests):
    """Run the test files in a fresh child; return what it reported (frames), its exit and output tail."""
    rep = {"status": "ok", "frames": [], "exit": None, "output": "", "timeout": False}
    log_path = "/tmp/tests-%s.log" % os.urandom(8).hex()
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    r_src, w_src = os.pipe()
    r_rep, w_rep = os.pipe()
    proc = subprocess.Popen(
        [sys.executable, "-I", "-S", "-B", "-u", "-c", CHILD, str(r_src), str(w_rep)],
        pass_fds=(r_src, w_rep), stdin=subprocess.DEVNULL, stdout=fd, stderr=subprocess.STDOUT,
        env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONHASHSEED": "0"},
        cwd=os.getcwd(), start_new_session=True, close_fds=True,
    )
    os.close(fd)
    os.close(r_src)
    os.close(w_rep)
    data = json.dumps(tests).encode("utf-8")
    data = struct.pack(">I", len(data)) + data
    try:
        while data:
            data = data[os.write(w_src, data):]
    except OSError:
        pass
    os.close(w_src)
    buf = b""
    kept = 0
    try:
        while True:
            left = DEADLINE - time.monotonic()
            if left <= 0:
                rep["timeout"] = True
                break
            r, _, _ = select.select([r_rep], [], [], left)
            if not r:
                continue
            c = os.read(r_rep, 1 << 16)
            if not c:
                break
            buf += c
            while len(buf) >= 4:
                (n,) = struct.unpack(">I", buf[:4])
                if n > MAX_FRAME or kept + 4 + n > MAX_REPORT:
                    rep["frames"].append({"bad": "oversized frame" if n > MAX_FRAME else "oversized report"})
                    raise StopIteration
                if len(buf) < 4 + n:
                    break
                try:
                    rep["frames"].append(json.loads(buf[4:4 + n].decode("utf-8")))
                except ValueError:
                    rep["frames"].append({"bad": "malformed frame"})
                buf = buf[4 + n:]
                kept += 4 + n
            if len(rep["frames"]) > 20000:
                break
    except StopIteration:
        pass
    finally:
        os.close(r_rep)
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            proc.wait(timeout=2)
        except Exception:
            pass
        rep["exit"] = proc.returncode
        try:
            with open(log_path, "rb") as f:
                f.seek(0, 2)
                f.seek(max(0, f.tell() - TAIL))
                rep["output"] = f.read().decode("utf-8", "replace")
            os.unlink(log_path)
        except OSError:
            pass
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
    NONCE = cfg.pop("nonce")
    DEADLINE = time.monotonic() + float(cfg["timeout_s"])
    TAIL = int(cfg.get("output_tail", 2000))
    started = False
    try:
        say("-started")  # from here the repository's code runs: a missing verdict is its failure
        started = True
        result = run_all(cfg["tests"])
        result["dumpable_off"] = dumpable_off
    except BaseException as e:
        why = "%s: %s" % (type(e).__name__, e)
        result = {"status": "disrupted" if started else "harness_error", "reason": why[:300]}
    try:
        text = json.dumps(result)
    except (TypeError, ValueError) as e:
        text = json.dumps({"status": "disrupted", "reason": "result not serialisable: %s" % e})
    say(" " + text)
    os._exit(0)


if __name__ == "__main__":  # as the sandbox's main.py; importing it (tests walk the package) does nothing
    main()
