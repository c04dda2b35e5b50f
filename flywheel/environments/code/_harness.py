# ruff: noqa: UP031  (runs under whatever Python the sandbox has: plain %-formatting on purpose)
"""The code verifier's trusted harness: runs as `main.py` inside the sandbox (standard library only).

Why it is shaped like this: the model's code must never be able to make a failing solution
pass, nor turn its failure into "no verdict". So the model's code and the tests never share a
process, and nothing the model does to this process counts as an infrastructure fault.

* This process (the *judge*) first makes itself non-dumpable (`prctl(PR_SET_DUMPABLE, 0)`), so
  processes of the same uid cannot read its memory, open its descriptors through `/proc` or
  ptrace it, and only then reads its configuration from stdin: a per-run random nonce, the
  task's test code, its prompt and entry point, and the source of the call protocol
  (`_harness_rpc.py`) and of the candidate's side (`_harness_child.py`). None of it touches the disk.
* It loads the tests, then starts the *candidate* as a fresh interpreter (`python -I -S`, new
  session, empty environment, stdin from /dev/null, stdout/stderr to a log file, no inherited
  descriptors except two pipes). The candidate loads `solution.py` (the model's code) and serves
  calls to the entry point; values cross as tagged JSON rebuilt as built-in types only (see
  `_harness_rpc.py`), so objects that override `__eq__`, patched `assert`/builtins/unittest, a
  `conftest.py`, fake "PASSED" prints or `sys.exit(0)` in the candidate change nothing here,
  where `check(candidate)` runs.
* In the local sandbox the judge is PID 1 of a fresh PID namespace: the kernel drops SIGKILL and
  SIGSTOP sent to it from inside, every catchable signal has a do-nothing handler, and the
  sandbox's seccomp filter refuses `prlimit64` on other processes. Where the candidate can still
  disrupt it (the Docker backend: `prlimit` on a same-uid process), the judge has
  already printed `<nonce>-started`: a judge that dies after that mark is the candidate's failure.
* The verdict is one stdout line `<nonce> {json}` from the judge. The candidate has no
  descriptor to that stdout and does not know the nonce. The judge reports the sha256 of the
  test code it ran and every change to the work dir (added, edited, deleted files, walked with
  bounds and without opening FIFOs); the verifier outside checks both.
"""

import ctypes
import hashlib
import json
import os
import re
import signal
import stat
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
    """The candidate shares our uid and may signal us: catchable signals change nothing."""


for _name in ("SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGALRM", "SIGVTALRM", "SIGPROF",
              "SIGTSTP", "SIGTTIN", "SIGTTOU", "SIGXFSZ"):
    if hasattr(signal, _name):
        signal.signal(getattr(signal, _name), _shrug)  # a handler, not SIG_IGN: exec resets it
CFG = json.loads(sys.stdin.buffer.read().decode("utf-8"))
sys.stdin.close()
NONCE = CFG.pop("nonce")
DEADLINE = time.monotonic() + float(CFG["timeout_s"])
RPC_SOURCE = CFG.pop("rpc_source")
CHILD_SOURCE = RPC_SOURCE + "\n" + CFG.pop("child_source")
RPC = {"__name__": "_harness_rpc"}
exec(compile(RPC_SOURCE, "_harness_rpc.py", "exec"), RPC)
Broken, Peer, Proxy = RPC["Broken"], RPC["Peer"], RPC["Proxy"]
MAX_DEPTH, MAX_ENTRIES = 24, 20000


def manifest(root):
    """Every entry of the work dir and its hash; bounded (depth, count), iterative, no links followed.

    The candidate can build any tree here (1,100 nested dirs overflow `os.walk`'s recursion, a
    FIFO blocks whoever opens it), so whatever exceeds the bounds or is not a regular file is
    recorded as such and, being new, fails the run as tampering."""
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
                st = os.lstat(ent.path)
                if stat.S_ISLNK(st.st_mode):
                    out[rel] = "link:" + os.readlink(ent.path)
                elif stat.S_ISDIR(st.st_mode):
                    out[rel] = "dir"
                    if depth + 1 >= MAX_DEPTH:
                        out[rel + "/<deeper>"] = "too deep"
                    else:
                        stack.append((rel, depth + 1))
                elif not stat.S_ISREG(st.st_mode):
                    out[rel] = "special:%o" % stat.S_IFMT(st.st_mode)
                else:
                    out[rel] = _file_hash(ent.path)
            except (OSError, ValueError) as e:
                out[rel] = "unreadable:" + type(e).__name__
    return out


def _file_hash(path):
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # swapped for a FIFO since the lstat
            return "special"
        h = hashlib.sha256()
        for chunk in iter(lambda: os.read(fd, 1 << 20), b""):
            h.update(chunk)
        return h.hexdigest()
    finally:
        os.close(fd)


def say(text):
    line = ("\n%s%s\n" % (NONCE, text)).encode()
    while line:
        line = line[os.write(OUT_FD, line):]


def _load_tests(res):
    """The test's namespace with `check`, loaded before the candidate exists (so it cannot disturb it)."""
    ns = {"__name__": "__judge__"}
    try:
        exec(compile(CFG.get("prompt") or "", "prompt.py", "exec"), ns)
    except BaseException:
        pass  # the prompt is prose, or a stub that does not run: its helpers are then unavailable
    try:
        exec(compile(CFG["test"], "test.py", "exec"), ns)
        return ns, ns["check"]
    except BaseException as e:
        res.update(status="task_error", reason="test code does not load: %s: %s" % (type(e).__name__, e))
        return ns, None


def _start_candidate(work, log_fd):
    r_req, w_req = os.pipe()
    r_rep, w_rep = os.pipe()
    proc = subprocess.Popen(
        [sys.executable, "-I", "-S", "-B", "-u", "-c", CHILD_SOURCE, str(r_req), str(w_rep), CFG["entry_point"]],
        pass_fds=(r_req, w_rep),
        stdin=subprocess.DEVNULL,
        stdout=log_fd,
        stderr=subprocess.STDOUT,
        env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONHASHSEED": "0"},
        cwd=work,
        start_new_session=True,
        close_fds=True,
    )
    os.close(r_req)
    os.close(w_rep)
    return proc, r_rep, w_req


def _assertion_reason(e):
    tb = traceback.extract_tb(e.__traceback__)
    line = next((f for f in reversed(tb) if f.filename == "test.py"), None)
    src = CFG["test"].splitlines()
    text = src[line.lineno - 1].strip()[:200] if line and 0 < line.lineno <= len(src) else ""
    where = " at test line %d: %s" % (line.lineno, text) if line else ""
    return "assertion failed%s%s" % (where, (" (%s)" % str(e)[:200]) if str(e) else "")


def _judge(check, peer):
    """Run `check(candidate)`; (passed, reason). Any protocol fault of the candidate is sticky."""
    try:
        hello = peer.recv()
    except Broken:
        return False, peer.fatal
    if type(hello) is not dict or not hello.get("ready"):
        get = hello.get if type(hello) is dict else (lambda k: None)
        return False, "solution does not load: %s: %s" % (get("exc"), get("msg"))
    try:
        check(Proxy(peer, 0, CFG["entry_point"]))
        ok, why = True, "all tests passed"
    except Broken:
        ok, why = False, ""
    except AssertionError as e:
        ok, why = False, _assertion_reason(e)
    except BaseException as e:
        ok, why = False, "test raised %s: %s" % (type(e).__name__, str(e)[:300])
    if peer.fatal:
        ok, why = False, peer.fatal
    return ok, why


def _stop(proc):
    """Kill the candidate and everything it started. In a fresh PID namespace (we are PID 1 or 2 under
    its root-owned init) `kill(-1)` reaches exactly the candidate's processes, escaped sessions too."""
    for target in ((-1,) if os.getpid() <= 2 else ()) + (-proc.pid,):
        try:
            os.kill(target, signal.SIGKILL)
        except OSError:
            pass
    try:
        proc.wait(timeout=2)
    except Exception:
        pass
    if os.getpid() <= 2:
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            pass


def _tail(fd):
    try:
        size = os.fstat(fd).st_size
        return os.pread(fd, 2000, max(0, size - 2000)).decode("utf-8", "replace")
    except OSError:
        return ""


def run():
    test_sha = hashlib.sha256(CFG["test"].encode("utf-8")).hexdigest()
    res = {"status": "failed", "reason": "", "calls": 0, "test_sha256": test_sha, "dumpable_off": DUMPABLE_OFF}
    ns, check = _load_tests(res)
    if check is None:
        return res
    work = os.getcwd()
    before = manifest(work)
    log_path = "/tmp/candidate-%s.log" % os.urandom(8).hex()  # not tempfile: its import costs ~10 ms
    log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    tail_fd = os.open(log_path, os.O_RDONLY)  # held: swapping the path for a FIFO cannot block us
    say("-started")  # from here the candidate may disrupt us: if no verdict follows, it is its failure
    STARTED.append(True)
    proc, rfd, wfd = _start_candidate(work, log_fd)
    os.close(log_fd)
    peer = Peer(rfd, wfd, deadline=DEADLINE, nan_ok=re.search(r"(?i)\bnan\b|isnan", CFG["test"]) is not None,
                strict=True, timeout_text="timeout: the tests did not finish within %ss" % CFG["timeout_s"])
    try:
        ns[CFG["entry_point"]] = Proxy(peer, 0, CFG["entry_point"])
        ok, why = _judge(check, peer)
        res.update(status="passed" if ok else "failed", reason=why)
        return res
    finally:
        res["calls"] = peer.calls
        try:
            peer.deadline = time.monotonic() + 0.5
            peer.send({"op": "exit"})
        except Exception:
            pass
        _stop(proc)
        res["child_exit"] = proc.returncode
        res["child_output"] = _tail(tail_fd)
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
