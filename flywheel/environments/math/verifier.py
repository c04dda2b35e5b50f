"""Math verifier: extract the one final answer, compare it with the reference using math-verify.

Extraction and its rules (strong/weak statements, hedges, `a = b` chains, Unicode normalisation,
input caps) live in `flywheel.environments.math.answer`. All candidates must agree with each other
(math-verify equivalence). A NaN/undefined answer never matches; an infinite one only matches an
infinite reference.

math-verify guards its own parsing with `signal.alarm`, which only works in the main thread.
Here `parse`/`verify` run with their timeouts disabled (`parsing_timeout=None`,
`timeout_seconds=None`) inside a small pool of worker *processes*; the caller waits with its
own deadline and kills a worker that overruns, so scoring works from any thread or process
and a pathological expression can neither hang nor leak CPU. The deadline counts the worker's
CPU time: a worker busy for `timeout_s` is the candidate's failure, one starved of CPU by load
is an infrastructure error (see `MathWorkerPool.judge`).
"""

from __future__ import annotations

import atexit
import json
import os
import queue
import select
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from flywheel.environments.judging import MAX_RESPONSE_CHARS, require, text_to_judge
from flywheel.environments.math.answer import (
    MAX_ANSWER_CHARS,
    NAN_TEXT_RE,
    degenerate,
    extract,
    extract_candidates,  # noqa: F401 - re-exported for callers and tests
    normalise,
    values_to_compare,
)
from flywheel.environments.verdict import TaskError, Verdict, VerifierInfraError, failed, passed

VERSION = "math-4"
MAX_CANDIDATES = 8
CPU_SHARE = 0.9
"""The deadline is CPU time: a worker that spent this share of `timeout_s` on CPU for one request was
busy with the candidate's input (the candidate's failure, reward 0)."""
WALL_FACTOR = 4.0
"""...while one that got less CPU within WALL_FACTOR x `timeout_s` of wall clock was starved by load:
an infrastructure error (VerifierInfraError, retried), never the candidate's failure."""
_CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


# --------------------------------------------------------------------------- worker pool
def _wrap(expr: str) -> str:
    return expr if ("$" in expr or "\\(" in expr or "\\[" in expr) else f"${expr}$"


def _judge(gold: str, cands: list[str]) -> dict[str, Any]:
    """Runs in a worker process: math-verify with its signal timeouts disabled."""
    from math_verify import parse, verify  # heavy: math-verify (sympy) loads in the verifier worker only

    def p(s: str):
        out = parse(_wrap(s), parsing_timeout=None)
        return out or parse(s, parsing_timeout=None)

    g = p(gold)
    if not g:
        return {"gold_ok": False, "why": "does not parse"}
    if _nonfinite(g[0]) == "nan":
        return {"gold_ok": False, "why": "is NaN/undefined"}
    parsed = [p(c) for c in cands]
    shown = [str(x[0]) if x else None for x in parsed]
    out = {"gold_ok": True, "parsed": shown, "gold": str(g[0]), "consistent": True, "correct": False}
    if not parsed[0]:
        return out
    kinds = {_nonfinite(x[0]) for x in parsed if x}
    if "nan" in kinds or ("inf" in kinds and _nonfinite(g[0]) != "inf"):
        return dict(out, nonfinite=True)  # NaN never equals anything; infinity only an infinite reference
    out["consistent"] = all(bool(x) and verify(parsed[0], x, timeout_seconds=None) for x in parsed[1:])
    out["correct"] = bool(verify(g, parsed[0], timeout_seconds=None))
    return out


def _nonfinite(e: Any) -> str | None:
    """"nan" for NaN / complex infinity / a symbol named nan, "inf" for anything holding +-oo, else None."""
    import sympy  # the worker's own import (loaded with math-verify)

    try:
        if isinstance(e, sympy.Symbol):
            return "nan" if e.name.lower() in ("nan", "\\text{nan}") else None
        if isinstance(e, float):
            return None if e == e and abs(e) != float("inf") else ("nan" if e != e else "inf")
        if isinstance(e, sympy.Basic):
            if e.has(sympy.nan, sympy.zoo) or any(s.name.lower() == "nan" for s in e.free_symbols
                                                     if isinstance(s, sympy.Symbol)):
                return "nan"
            if e.has(sympy.oo, -sympy.oo):
                return "inf"
    except Exception:  # noqa: BLE001 - an exotic object: judged by math-verify alone
        return None
    return None


def _worker_main() -> None:
    """Worker loop: one JSON request per stdin line, one JSON reply per stdout line."""
    import logging  # the worker process's own setup

    logging.disable(logging.WARNING)  # math-verify warns on every call with timeouts disabled
    out = os.fdopen(os.dup(1), "w")
    sys.stdout = sys.stderr  # stray prints must never corrupt the reply channel
    import math_verify  # noqa: F401  (import before announcing readiness)

    _judge("1", ["1"])  # warm sympy's caches
    out.write(json.dumps({"ready": True, "cpu": time.process_time()}) + "\n")
    out.flush()
    for line in sys.stdin:
        try:
            req = json.loads(line)
            reply = _judge(req["gold"], req["cands"])
        except Exception as e:  # noqa: BLE001 - the parent turns this into a failed verdict
            reply = {"error": f"{type(e).__name__}: {e}"[:500]}
        reply["cpu"] = time.process_time()  # the parent tells a busy worker from a starved one by it
        out.write(json.dumps(reply) + "\n")
        out.flush()


class _Worker:
    def __init__(self, startup_timeout_s: float) -> None:
        env = dict(os.environ)
        root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
        env["PYTHONUNBUFFERED"] = "1"
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", "from flywheel.environments.math.verifier import _worker_main; _worker_main()"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=env,
                close_fds=True,
            )
        except OSError as e:
            raise VerifierInfraError(f"cannot start math-verify worker: {e}") from e
        self._buf = b""
        self.cpu_seen = 0.0
        if self.readline(startup_timeout_s) is None:
            self.kill()
            raise VerifierInfraError(f"math-verify worker did not start within {startup_timeout_s}s")

    def readline(self, timeout_s: float) -> dict | None:
        """One JSON reply, or None when the deadline passes or the worker died."""
        deadline = time.monotonic() + timeout_s
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            r, _, _ = select.select([fd], [], [], left)
            if not r:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                return None
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        reply = json.loads(line)
        self.cpu_seen = float(reply.pop("cpu", self.cpu_seen))
        return reply

    def cpu_used(self) -> float | None:
        """CPU seconds the live worker used since its last reply (Linux /proc), None when unknown."""
        try:
            with open(f"/proc/{self.proc.pid}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            return max(0.0, (int(fields[11]) + int(fields[12])) / _CLK_TCK - self.cpu_seen)
        except (OSError, IndexError, ValueError):
            return None

    def ask(self, req: dict, timeout_s: float) -> dict | None:
        try:
            self.proc.stdin.write((json.dumps(req) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            return None
        return self.readline(timeout_s)

    def kill(self) -> float | None:
        """Kill and reap the worker; the CPU seconds it used since its last reply (None if unknown)."""
        try:
            self.proc.kill()
        except OSError:
            pass
        try:
            _, status, usage = os.wait4(self.proc.pid, 0)
            self.proc.returncode = -9 if os.WIFSIGNALED(status) else os.waitstatus_to_exitcode(status)
            return max(0.0, usage.ru_utime + usage.ru_stime - self.cpu_seen)
        except ChildProcessError:
            return None
        except Exception:  # noqa: BLE001
            return None


class MathWorkerPool:
    """Up to `max_workers` warm math-verify processes, shared by threads; overrunning ones are killed."""

    def __init__(self, max_workers: int = 4, startup_timeout_s: float = 120.0) -> None:
        self.max_workers = max_workers
        self.startup_timeout_s = startup_timeout_s
        self._idle: queue.LifoQueue[_Worker] = queue.LifoQueue()
        self._lock = threading.Lock()
        self._count = 0
        self._pid = os.getpid()
        self._all: list[_Worker] = []

    def _acquire(self) -> _Worker:
        try:
            return self._idle.get_nowait()
        except queue.Empty:
            pass
        with self._lock:
            spawn = self._count < self.max_workers
            if spawn:
                self._count += 1
        if spawn:
            try:
                w = _Worker(self.startup_timeout_s)
            except BaseException:
                with self._lock:
                    self._count -= 1
                raise
            with self._lock:
                self._all.append(w)
            return w
        return self._idle.get()

    def _discard(self, w: _Worker) -> float | None:
        cpu = w.kill()
        with self._lock:
            self._count -= 1
            if w in self._all:
                self._all.remove(w)
        return cpu

    def judge(self, gold: str, cands: list[str], timeout_s: float) -> dict | None:
        """The worker's reply, or None when the *input* kept it busy for `timeout_s` of CPU.

        An overrun worker is killed and replaced. One starved of CPU (under CPU_SHARE of the budget
        within WALL_FACTOR x the wall deadline) raises VerifierInfraError: retried, not the candidate's fault.
        """
        w = self._acquire()
        start = time.monotonic()
        reply = w.ask({"gold": gold, "cands": cands}, timeout_s)
        while reply is None and w.proc.poll() is None:  # over the wall deadline: was it busy or starved?
            used, wall_left = w.cpu_used(), start + WALL_FACTOR * timeout_s - time.monotonic()
            if used is None or used >= CPU_SHARE * timeout_s or wall_left <= 0:
                break
            reply = w.readline(min(wall_left, max(0.05, timeout_s - used)))
        if reply is None:
            alive = w.proc.poll() is None
            cpu = self._discard(w)
            if not alive:
                raise VerifierInfraError("math-verify worker died")
            if cpu is not None and cpu < CPU_SHARE * timeout_s:
                raise VerifierInfraError(f"math-verify worker got {cpu:.2f}s of CPU in "
                                         f"{time.monotonic() - start:.1f}s: machine overloaded")
            return None
        self._idle.put(w)
        return reply

    def close(self) -> None:
        with self._lock:
            workers, self._all = self._all, []
            self._count = 0
        for w in workers:
            w.kill()
        while not self._idle.empty():
            self._idle.get_nowait()


_POOL: MathWorkerPool | None = None
_POOL_LOCK = threading.Lock()


def default_pool() -> MathWorkerPool:
    """The process-wide pool (re-created after a fork: worker pipes do not survive one)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None or _POOL._pid != os.getpid():
            _POOL = MathWorkerPool(max_workers=max(2, min(8, (os.cpu_count() or 2))))
        return _POOL


@atexit.register
def _close_pool() -> None:
    if _POOL is not None and _POOL._pid == os.getpid():
        _POOL.close()


# --------------------------------------------------------------------------- the verifier
class MathVerifier:
    """Task `{"prompt", "answer"}`; passes when the one extracted answer equals `answer`."""

    name = "math"
    version = VERSION

    def __init__(self, timeout_s: float = 5.0, pool: MathWorkerPool | None = None) -> None:
        self.timeout_s = timeout_s
        self._pool = pool

    @property
    def pool(self) -> MathWorkerPool:
        return self._pool or default_pool()

    def verify(self, task: dict[str, Any], response: Any) -> Verdict:
        gold = normalise(str(require(task, "answer")["answer"]).strip())
        if not gold:
            raise TaskError("task 'answer' is empty")
        if NAN_TEXT_RE.match(gold.strip("$ ")):
            raise TaskError(f"reference answer {gold!r} is NaN")
        text = text_to_judge(response)
        if len(text) > MAX_RESPONSE_CHARS:
            return failed("response too long", chars=len(text))
        text = normalise(text)
        if len(text) > MAX_RESPONSE_CHARS:  # NFKC can expand a character up to 18-fold
            return failed("response too long", chars=len(text))
        if (why := degenerate(text)) is not None:
            return failed(why, chars=len(text))
        ex = extract(text)
        details: dict[str, Any] = {"method": ex.method, "candidates": ex.cands[:MAX_CANDIDATES]}
        if not ex.cands:
            return failed("no final answer found", **details)
        if ex.hedge is not None:
            return failed(f"a second answer hedged after the final one ({ex.hedge!r})", **details)
        if any(len(c) > MAX_ANSWER_CHARS for c in ex.cands):
            return failed("final answer too long", **details)
        if any(not c for c in ex.cands):
            return failed("empty final answer", **details)
        values, why = values_to_compare(ex.cands, gold)
        if why is not None:
            return failed(why, **details)
        if len(values) > MAX_CANDIDATES:
            return failed(f"several candidate answers ({len(values)})", **details)
        reply = self.pool.judge(gold, values, self.timeout_s)
        if reply is None:
            return failed(f"timeout: math-verify took over {self.timeout_s}s", cacheable=False, **details)
        if "error" in reply:
            return failed(f"answer could not be compared: {reply['error']}", **details)
        if not reply.get("gold_ok"):
            raise TaskError(f"reference answer {gold!r} {reply.get('why', 'does not parse')}")
        details.update(parsed=reply.get("parsed"), gold=reply.get("gold", gold))
        if reply.get("nonfinite") or any(NAN_TEXT_RE.match(c) for c in values):
            return failed("the answer is NaN/undefined or infinite", **details)
        if not reply["consistent"]:
            return failed("several different candidate answers", **details)
        if reply["correct"]:
            return passed("answer matches reference", **details)
        return failed("answer does not match reference", **details)
