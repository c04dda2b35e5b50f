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
import re
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
if hasattr(sys, "set_int_max_str_digits"):
    sys.set_int_max_str_digits(0)  # a right answer with a 5,000-digit int must cross and compare


def _shrug(signum, frame):
    """The candidate shares our uid and can signal us: catchable signals change nothing."""


for _name in ("SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGALRM", "SIGVTALRM", "SIGPROF"):
    if hasattr(signal, _name):
        signal.signal(getattr(signal, _name), _shrug)  # a handler, not SIG_IGN: exec resets it
CFG = json.loads(sys.stdin.buffer.read().decode("utf-8"))
sys.stdin.close()
NONCE = CFG.pop("nonce")
DEADLINE = time.monotonic() + float(CFG["timeout_s"])
MAX_FRAME = 32 << 20

CHILD = r'''
import builtins, json, os, struct, sys
RFD, WFD, ENTRY = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
if hasattr(sys, "set_int_max_str_digits"):
    sys.set_int_max_str_digits(0)
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
    m = getattr(t, "__module__", "")
    if m == "fractions" and t.__name__ == "Fraction":
        return {"t": "fraction", "v": [int(x.numerator), int(x.denominator)]}
    if m in ("decimal", "_decimal", "_pydecimal") and t.__name__ == "Decimal":
        return {"t": "decimal", "v": str(x)}
    if hasattr(t, "__next__") and hasattr(t, "__iter__"):
        items = []
        for i in x:
            if len(items) >= 1000000:
                raise ValueError("iterator yields over a million items")
            items.append(enc(i, depth + 1))
        return {"t": "iter", "v": items}
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
        if t == "fraction":
            from fractions import Fraction
            return Fraction(v[0], v[1])
        if t == "decimal":
            from decimal import Decimal
            return Decimal(v)
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
    except BaseException as e:
        wr({"id": req["id"], "exc": "TypeError", "msg": "return value cannot be passed back: %s" % e})
'''


class Fatal(Exception):
    """The candidate timed out, died or broke the protocol: the run fails whatever the test does."""


MAX_DEPTH, MAX_ENTRIES = 24, 20000


def manifest(root):
    """Every entry of the work dir and its hash; bounded (depth, count), iterative, no links followed.

    The candidate can build any tree here (1,100 nested dirs overflow `os.walk`'s recursion), so
    whatever exceeds the bounds is recorded as such and, being new, fails the run as tampering."""
    out, stack = {}, [("", 0)]
    while stack:
        rel_dir, depth = stack.pop()
        try:
            entries = list(os.scandir(os.path.join(root, rel_dir) if rel_dir else root))
        except OSError as e:
            out[rel_dir or "."] = "unreadable:" + type(e).__name__
            continue
        for ent in entries:
            rel = os.path.join(rel_dir, ent.name) if rel_dir else ent.name
            if len(out) >= MAX_ENTRIES:
                out["<over %d entries>" % MAX_ENTRIES] = "too many"
                return out
            try:
                if ent.is_symlink():
                    out[rel] = "link:" + os.readlink(ent.path)
                elif ent.is_dir(follow_symlinks=False):
                    out[rel] = "dir"
                    if depth + 1 >= MAX_DEPTH:
                        out[rel + "/<deeper>"] = "too deep"
                    else:
                        stack.append((rel, depth + 1))
                else:
                    h = hashlib.sha256()
                    with open(ent.path, "rb") as f:
                        for chunk in iter(lambda: f.read(1 << 20), b""):
                            h.update(chunk)
                    out[rel] = h.hexdigest()
            except (OSError, ValueError) as e:
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
    if type(x).__name__ == "Fraction" and type(x).__module__ == "fractions":
        return {"t": "fraction", "v": [x.numerator, x.denominator]}
    if type(x).__name__ == "Decimal" and type(x).__module__ in ("decimal", "_decimal", "_pydecimal"):
        return {"t": "decimal", "v": str(x)}
    raise TypeError("the test passes a %s, which cannot cross to the candidate" % type(x).__name__)


NAN_OK = False  # set in run(): only a test that speaks of NaN may receive one


class NotANumber(Exception):
    """The candidate returned NaN to a test that never expects one."""


def _finite_enough(f):
    if f != f and not NAN_OK:  # `abs(nan - ref) > tol` is False: NaN would pass tolerance checks
        raise NotANumber()
    return f


def dec(x, depth=0):
    """Rebuild a value from the candidate as plain built-in types: nothing of the model's survives."""
    if depth > 200:
        raise TypeError("candidate returned a value nested too deeply")
    if type(x) is float:
        return _finite_enough(x)
    if x is None or type(x) in (bool, int, str):
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
            return complex(_finite_enough(float(v[0])), _finite_enough(float(v[1])))
        if t == "iter" and type(v) is list:
            return iter([dec(i, depth + 1) for i in v])  # a generator's items, consumable once
        if t == "fraction" and type(v) is list and len(v) == 2 and all(type(i) is int for i in v) and v[1]:
            from fractions import Fraction
            return Fraction(v[0], v[1])
        if t == "decimal" and type(v) is str:
            from decimal import Decimal
            d = Decimal(v)
            if d.is_nan() and not NAN_OK:
                raise NotANumber()
            return d
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
            if name in ("StopIteration", "StopAsyncIteration"):  # would end the test's map/generator
                raise RuntimeError("candidate raised %s: %s" % (name, msg))  # as PEP 479 does
            cls = getattr(builtins, name, None)
            if isinstance(cls, type) and issubclass(cls, Exception) and not issubclass(cls, Warning):
                try:
                    raise cls(msg)
                except TypeError:
                    pass
            raise RuntimeError("%s: %s" % (name, msg))
        if "ok" not in rep:
            raise self.die("candidate broke the reply protocol")
        try:
            return dec(rep["ok"])
        except NotANumber:
            raise self.die("candidate returned NaN, which never equals a reference") from None


def say(text):
    line = ("\n%s%s\n" % (NONCE, text)).encode()
    while line:
        line = line[os.write(OUT_FD, line):]


def run():
    global NAN_OK
    NAN_OK = re.search(r"(?i)\bnan\b|isnan", CFG["test"]) is not None  # not "banana"
    work = os.getcwd()
    before = manifest(work)
    test_sha = hashlib.sha256(CFG["test"].encode("utf-8")).hexdigest()
    res = {"status": "failed", "reason": "", "calls": 0, "test_sha256": test_sha, "dumpable_off": DUMPABLE_OFF}
    log_path = "/tmp/candidate-%s.log" % os.urandom(8).hex()  # not tempfile: its import costs ~10 ms
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    r_req, w_req = os.pipe()
    r_rep, w_rep = os.pipe()
    say("-started")  # from here the candidate may disrupt us: if no verdict follows, it is its failure
    STARTED.append(True)
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


STARTED = []
try:
    result = run()
except BaseException as e:  # never a pass; infra only when the candidate had not started yet
    why = "%s: %s" % (type(e).__name__, e)
    if STARTED:
        result = {"status": "failed", "reason": "judge disrupted while the candidate ran: " + why[:300],
                  "test_sha256": hashlib.sha256(CFG["test"].encode("utf-8")).hexdigest()}
    else:
        result = {"status": "harness_error", "reason": why}
try:
    text = json.dumps(result)
except (TypeError, ValueError) as e:
    text = json.dumps({"status": "failed", "reason": "judge result not serialisable: %s" % e})
say(" " + text)
os._exit(0)
