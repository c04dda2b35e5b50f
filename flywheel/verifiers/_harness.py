# ruff: noqa: UP031  (runs under whatever Python the sandbox has: plain %-formatting on purpose)
"""The code verifier's trusted harness: runs as `main.py` inside the sandbox (standard library only).

Why it is shaped like this: the model's code must never be able to make a failing solution
pass. So the model's code and the tests never share a process.

* This process (the *judge*) first makes itself non-dumpable (`prctl(PR_SET_DUMPABLE, 0)`), so
  processes of the same uid cannot read its memory or open its file descriptors through
  `/proc`, and only then reads its configuration from stdin: a per-run random nonce, the
  task's test code, its prompt and entry point. None of it ever touches the disk.
* It starts the *candidate* as a fresh interpreter (`python -I -S`, new session, empty
  environment, stdin from /dev/null, stdout/stderr to a log file, no inherited descriptors
  except two pipes). The candidate loads `solution.py` (the model's code) and serves calls to
  the entry point over the pipes. Values cross as tagged JSON and are rebuilt here as plain
  built-in types only, so objects that override `__eq__`, patched `assert`/builtins/unittest,
  a `conftest.py`, fake "PASSED" prints or `sys.exit(0)` in the candidate have no effect on
  the judge, where `check(candidate)` runs.
* The verdict is one stdout line `<nonce> {json}` from the judge. The candidate has no
  descriptor to that stdout and does not know the nonce. The judge reports the sha256 of the
  test code it ran and every change to the work dir (added, edited, deleted files); the
  verifier outside checks both.
"""

import builtins
import ctypes
import hashlib
import json
import os
import select
import signal
import struct
import subprocess
import sys
import time
import traceback


def _nondumpable():
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0) == 0  # PR_SET_DUMPABLE = 4
    except Exception:
        return False


DUMPABLE_OFF = _nondumpable()  # before anything secret is in memory
OUT_FD = os.dup(1)
CFG = json.loads(sys.stdin.buffer.read().decode("utf-8"))
sys.stdin.close()
NONCE = CFG.pop("nonce")
DEADLINE = time.monotonic() + float(CFG["timeout_s"])
MAX_FRAME = 32 << 20

CHILD = r'''
import builtins, json, os, struct, sys
RFD, WFD, ENTRY = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
def _read(n):
    b = b""
    while len(b) < n:
        c = os.read(RFD, n - len(b))
        if not c:
            os._exit(0)
        b += c
    return b
def rd():
    (n,) = struct.unpack(">I", _read(4))
    return json.loads(_read(n))
def wr(obj):
    d = json.dumps(obj).encode()
    d = struct.pack(">I", len(d)) + d
    while d:
        d = d[os.write(WFD, d):]
def enc(x, depth=0):
    if depth > 200:
        raise ValueError("value nested too deeply")
    if x is None or x is True or x is False:
        return x
    t = type(x)
    if isinstance(x, bool):
        return bool(x)
    if isinstance(x, int):
        return int(x)
    if isinstance(x, float):
        return float(x)
    if isinstance(x, str):
        return str(x)
    if isinstance(x, list):
        return [enc(i, depth + 1) for i in x]
    if isinstance(x, tuple):
        return {"t": "tuple", "v": [enc(i, depth + 1) for i in x]}
    if isinstance(x, (set, frozenset)):
        return {"t": "set" if isinstance(x, set) else "frozenset", "v": [enc(i, depth + 1) for i in x]}
    if isinstance(x, dict):
        return {"t": "dict", "v": [[enc(k, depth + 1), enc(v, depth + 1)] for k, v in x.items()]}
    if isinstance(x, (bytes, bytearray)):
        return {"t": "bytes", "v": bytes(x).hex()}
    if isinstance(x, complex):
        return {"t": "complex", "v": [x.real, x.imag]}
    return {"t": "unsupported", "v": t.__name__}
def dec(x):
    if isinstance(x, list):
        return [dec(i) for i in x]
    if isinstance(x, dict):
        t, v = x["t"], x["v"]
        if t == "tuple":
            return tuple(dec(i) for i in v)
        if t == "set":
            return set(dec(i) for i in v)
        if t == "frozenset":
            return frozenset(dec(i) for i in v)
        if t == "dict":
            return {dec(k): dec(w) for k, w in v}
        if t == "bytes":
            return bytes.fromhex(v)
        if t == "complex":
            return complex(v[0], v[1])
        raise TypeError("cannot pass " + str(t))
    return x
def err(e):
    return {"exc": type(e).__name__, "msg": str(e)[:500]}
ns = {"__name__": "__solution__", "__builtins__": builtins}
try:
    with open("solution.py", encoding="utf-8") as f:
        src = f.read()
    exec(compile(src, "solution.py", "exec"), ns)
    fn = ns.get(ENTRY)
    if not callable(fn):
        wr({"ready": False, "exc": "NameError", "msg": "solution defines no function " + repr(ENTRY)})
        os._exit(0)
except SystemExit as e:
    wr({"ready": False, "exc": "SystemExit", "msg": "solution called exit(%r) while loading" % (e.code,)})
    os._exit(0)
except BaseException as e:
    wr(dict(err(e), ready=False))
    os._exit(0)
wr({"ready": True})
while True:
    req = rd()
    if req.get("op") == "exit":
        os._exit(0)
    try:
        out = fn(*dec(req["args"]), **dec(req["kwargs"]))
        rep = {"id": req["id"], "ok": enc(out)}
    except SystemExit as e:
        rep = {"id": req["id"], "exc": "SystemExit", "msg": "candidate called exit(%r)" % (e.code,)}
    except BaseException as e:
        rep = {"id": req["id"], "exc": type(e).__name__, "msg": str(e)[:500]}
    try:
        wr(rep)
    except (TypeError, ValueError) as e:
        wr({"id": req["id"], "exc": "TypeError", "msg": "return value cannot be passed back: %s" % e})
'''


class Fatal(Exception):
    """The candidate timed out, died or broke the protocol: the run fails whatever the test does."""


def manifest(root):
    out = {}
    for d, dirs, files in os.walk(root):
        for name in dirs + files:
            p = os.path.join(d, name)
            rel = os.path.relpath(p, root)
            try:
                if os.path.islink(p):
                    out[rel] = "link:" + os.readlink(p)
                elif os.path.isdir(p):
                    out[rel] = "dir"
                else:
                    with open(p, "rb") as f:
                        out[rel] = hashlib.sha256(f.read()).hexdigest()
            except OSError as e:
                out[rel] = "unreadable:" + type(e).__name__
    return out


def enc(x, depth=0):
    if depth > 200:
        raise TypeError("argument nested too deeply")
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    if isinstance(x, list):
        return [enc(i, depth + 1) for i in x]
    if isinstance(x, tuple):
        return {"t": "tuple", "v": [enc(i, depth + 1) for i in x]}
    if isinstance(x, (set, frozenset)):
        return {"t": "set" if isinstance(x, set) else "frozenset", "v": [enc(i, depth + 1) for i in x]}
    if isinstance(x, dict):
        return {"t": "dict", "v": [[enc(k, depth + 1), enc(v, depth + 1)] for k, v in x.items()]}
    if isinstance(x, (bytes, bytearray)):
        return {"t": "bytes", "v": bytes(x).hex()}
    if isinstance(x, complex):
        return {"t": "complex", "v": [x.real, x.imag]}
    raise TypeError("the test passes a %s, which cannot cross to the candidate" % type(x).__name__)


def dec(x, depth=0):
    """Rebuild a value from the candidate as plain built-in types: nothing of the model's survives."""
    if depth > 200:
        raise TypeError("candidate returned a value nested too deeply")
    if x is None or type(x) in (bool, int, float, str):
        return x
    if type(x) is list:
        return [dec(i, depth + 1) for i in x]
    if type(x) is dict and set(x) == {"t", "v"}:
        t, v = x["t"], x["v"]
        if t == "tuple" and type(v) is list:
            return tuple(dec(i, depth + 1) for i in v)
        if t in ("set", "frozenset") and type(v) is list:
            s = {dec(i, depth + 1) for i in v}
            return s if t == "set" else frozenset(s)
        if t == "dict" and type(v) is list:
            return {dec(p[0], depth + 1): dec(p[1], depth + 1) for p in v if type(p) is list and len(p) == 2}
        if t == "bytes" and type(v) is str:
            return bytes.fromhex(v)
        if t == "complex" and type(v) is list and len(v) == 2:
            return complex(float(v[0]), float(v[1]))
        if t == "unsupported":
            raise TypeError("candidate returned a %s, not a plain value" % str(v)[:80])
    raise TypeError("candidate sent a malformed value")


class Candidate:
    """Stands in for the entry point inside `check`: every call is a round trip to the candidate."""

    def __init__(self, proc, wfd, rfd, name):
        self.proc, self.wfd, self.rfd, self.__name__ = proc, wfd, rfd, name
        self.calls, self.fatal, self.buf = 0, None, b""

    def send(self, obj):
        d = json.dumps(obj).encode()
        d = struct.pack(">I", len(d)) + d
        try:
            while d:
                d = d[os.write(self.wfd, d):]
        except OSError as e:
            raise self.die("candidate process is gone (%s)" % e.__class__.__name__) from None

    def _read(self, n):
        while len(self.buf) < n:
            left = DEADLINE - time.monotonic()
            if left <= 0:
                raise self.die("timeout: the tests did not finish within %ss" % CFG["timeout_s"])
            r, _, _ = select.select([self.rfd], [], [], left)
            if not r:
                continue
            c = os.read(self.rfd, 1 << 20)
            if not c:
                raise self.die("candidate process exited (code %s) before answering" % self.proc.poll())
            self.buf += c
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def recv(self):
        (n,) = struct.unpack(">I", self._read(4))
        if n > MAX_FRAME:
            raise self.die("candidate sent an oversized reply")
        try:
            return json.loads(self._read(n))
        except ValueError:
            raise self.die("candidate broke the reply protocol") from None

    def die(self, why):
        if self.fatal is None:
            self.fatal = why
        return Fatal(self.fatal)

    def __call__(self, *args, **kwargs):
        if self.fatal:
            raise Fatal(self.fatal)
        self.calls += 1
        self.send({"id": self.calls, "args": enc(list(args)), "kwargs": enc(kwargs)})
        rep = self.recv()
        if type(rep) is not dict or rep.get("id") != self.calls:
            raise self.die("candidate broke the reply protocol")
        if "exc" in rep:
            name, msg = str(rep["exc"])[:80], str(rep.get("msg", ""))[:500]
            cls = getattr(builtins, name, None)
            if isinstance(cls, type) and issubclass(cls, Exception) and not issubclass(cls, Warning):
                try:
                    raise cls(msg)
                except TypeError:
                    pass
            raise RuntimeError("%s: %s" % (name, msg))
        if "ok" not in rep:
            raise self.die("candidate broke the reply protocol")
        return dec(rep["ok"])


def run():
    work = os.getcwd()
    before = manifest(work)
    test_sha = hashlib.sha256(CFG["test"].encode("utf-8")).hexdigest()
    res = {"status": "failed", "reason": "", "calls": 0, "test_sha256": test_sha, "dumpable_off": DUMPABLE_OFF}
    log_path = "/tmp/candidate-%s.log" % os.urandom(8).hex()  # not tempfile: its import costs ~10 ms
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    r_req, w_req = os.pipe()
    r_rep, w_rep = os.pipe()
    proc = subprocess.Popen(
        [sys.executable, "-I", "-S", "-B", "-u", "-c", CHILD, str(r_req), str(w_rep), CFG["entry_point"]],
        pass_fds=(r_req, w_rep),
        stdin=subprocess.DEVNULL,
        stdout=fd,
        stderr=subprocess.STDOUT,
        env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONHASHSEED": "0"},
        cwd=work,
        start_new_session=True,
        close_fds=True,
    )
    os.close(fd)
    os.close(r_req)
    os.close(w_rep)
    cand = Candidate(proc, w_req, r_rep, CFG["entry_point"])
    try:
        ns = {"__name__": "__judge__"}
        try:
            exec(compile(CFG.get("prompt") or "", "prompt.py", "exec"), ns)
        except BaseException:
            pass  # the prompt is prose, or a stub that does not run: its helpers are then unavailable
        try:
            exec(compile(CFG["test"], "test.py", "exec"), ns)
            check = ns["check"]
        except BaseException as e:
            res.update(status="task_error", reason="test code does not load: %s: %s" % (type(e).__name__, e))
            return res
        ns[CFG["entry_point"]] = cand
        try:
            hello = cand.recv()
        except Fatal:
            res["reason"] = cand.fatal
            return res
        if type(hello) is not dict or not hello.get("ready"):
            res["reason"] = "solution does not load: %s: %s" % (hello.get("exc"), hello.get("msg"))
            return res
        try:
            check(cand)
            ok, why = True, "all tests passed"
        except Fatal:
            ok, why = False, ""
        except AssertionError as e:
            tb = traceback.extract_tb(e.__traceback__)
            line = next((f for f in reversed(tb) if f.filename == "test.py"), None)
            src = CFG["test"].splitlines()
            text = src[line.lineno - 1].strip()[:200] if line and 0 < line.lineno <= len(src) else ""
            where = " at test line %d: %s" % (line.lineno, text) if line else ""
            ok, why = False, "assertion failed%s%s" % (where, (" (%s)" % str(e)[:200]) if str(e) else "")
        except BaseException as e:
            ok, why = False, "test raised %s: %s" % (type(e).__name__, str(e)[:300])
        if cand.fatal:
            ok, why = False, cand.fatal
        res.update(status="passed" if ok else "failed", reason=why)
        return res
    finally:
        res["calls"] = cand.calls
        try:
            cand.send({"op": "exit"})
        except Exception:
            pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            proc.wait(timeout=2)
        except Exception:
            pass
        res["child_exit"] = proc.returncode
        try:
            with open(log_path, "rb") as f:
                f.seek(0, 2)
                f.seek(max(0, f.tell() - 2000))
                res["child_output"] = f.read().decode("utf-8", "replace")
        except OSError:
            res["child_output"] = ""
        after = manifest(work)
        tamper = sorted(
            ["deleted " + k for k in before if k not in after]
            + ["added " + k for k in after if k not in before]
            + ["changed " + k for k in before if k in after and before[k] != after[k]]
        )
        res["tamper"] = tamper[:20]
        if tamper:
            res.update(status="failed", reason="work dir tampered with: " + ", ".join(tamper[:5]))


try:
    result = run()
except BaseException as e:  # the judge itself failed: report it as such, never as a pass
    result = {"status": "harness_error", "reason": "%s: %s" % (type(e).__name__, e)}
line = ("\n%s %s\n" % (NONCE, json.dumps(result))).encode()
while line:
    line = line[os.write(OUT_FD, line):]
os._exit(0)
