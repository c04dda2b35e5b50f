"""Math verifier: extract the final answer, compare it with the reference using math-verify.

Extraction, in priority order: every `\\boxed{...}`/`\\fbox{...}`, every `Answer: ...` line,
else the last number of the response. All extracted candidates must agree with each other
(math-verify equivalence): "Answer: 3 or 4", two boxes with different values, or an Answer
line contradicting a box are several answers at once and fail. A single answer that is a
set/list ("3, 4") fails against a scalar reference because math-verify compares it as a set.

math-verify guards its own parsing with `signal.alarm`, which only works in the main thread.
Here `parse`/`verify` run with their timeouts disabled (`parsing_timeout=None`,
`timeout_seconds=None`) inside a small pool of worker *processes*; the caller waits with its
own deadline and kills a worker that overruns, so scoring works from any thread or process
and a pathological expression can neither hang nor leak CPU.
"""

from __future__ import annotations

import atexit
import json
import os
import queue
import re
import select
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from flywheel.verifiers.common import (
    MAX_RESPONSE_CHARS,
    TaskError,
    failed,
    passed,
    require,
    text_to_judge,
)
from flywheel.verifiers.verdict import Verdict, VerifierInfraError

VERSION = "math-2"
MAX_CANDIDATES = 8
MAX_ANSWER_CHARS = 300

_BOX_RE = re.compile(r"\\(?:boxed|fbox)\s*\{")
_ANSWER_RE = re.compile(
    r"(?im)(?:(?:^|(?<=[.!?]))[ \t*#>_-]*(?:(?:so|thus|therefore|hence),?\s+)?(?:the\s+)?(?:final\s+)?"
    r"answer\**[ \t]*(?::|\bis\b:?)|\bthe\s+(?:final\s+)?answer\s+is\b:?)\**[ \t]*"
)
_SENTENCE_END_RE = re.compile(r"\.(?=\s|$)")
_INNER_ANSWER_RE = re.compile(r"(?i)\banswer\**[ \t]*(?::|\bis\b:?)\**[ \t]*")
"""Inside an answer segment any further "answer:" starts another candidate ("Answer: 3, no, answer: 7")."""
_NUMBER_RE = re.compile(r"-?\d[\d,]*(?:\.\d+)?(?:\s*/\s*\d+)?")
_HEDGE_RE = re.compile(
    r"-?\d[\d,]*(?:\.\d+)?\s*(?:\bor\b|\beither\b|/\s*or|\band/or\b|\bmaybe\b|\bpossibly\b)\s*(?:maybe\s+)?-?\d"
)
_HEDGE_WORD_RE = re.compile(r"(?i)\bor\b|\\lor\b|\\vee\b|\\pm\b|±")


# --------------------------------------------------------------------------- extraction
def _balanced(text: str, start: int) -> tuple[str, int] | None:
    """Content of the brace group opening at text[start-1] == '{', and the index after it."""
    depth, i = 1, start
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            i += 2
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return text[start:i], i + 1
        i += 1
    return None


def _clean(ans: str) -> str:
    ans = ans.strip().strip("*").strip().rstrip(".;!,").rstrip()
    if len(ans) >= 2 and ans[0] == "$" and ans[-1] == "$":
        ans = ans.strip("$").strip()
    if ans.startswith("\\(") and ans.endswith("\\)"):
        ans = ans[2:-2].strip()
    return ans


def extract_candidates(text: str) -> tuple[str, list[str]]:
    """(method, candidate answer strings): boxed and Answer lines together, else the last number."""
    cands: list[str] = []
    method = []
    for m in _BOX_RE.finditer(text):
        got = _balanced(text, m.end())
        if got is not None:
            cands.append(_clean(got[0]))
    if cands:
        method.append("boxed")
    n_box = len(cands)
    marks = list(_ANSWER_RE.finditer(text))
    for k, m in enumerate(marks):
        stop = marks[k + 1].start() if k + 1 < len(marks) else len(text)
        seg = text[m.end() : stop].split("\n", 1)[0]
        if _BOX_RE.search(seg):
            continue  # its boxes are already candidates
        for part in _INNER_ANSWER_RE.split(seg):
            part = _clean(_SENTENCE_END_RE.split(part, 1)[0])
            if part:
                cands.append(part)
    if len(cands) > n_box:
        method.append("answer")
    if cands:
        return "+".join(method), cands
    # fallback: the last number; a hedge between numbers in the final sentence is two answers
    tail = re.split(r"(?:\n|(?<!\d)\.(?!\d))", text.strip())
    tail_text = next((s for s in reversed(tail) if _NUMBER_RE.search(s)), "")
    if _HEDGE_RE.search(tail_text):
        nums = _NUMBER_RE.findall(tail_text)
        return "last_number", [n.replace(" ", "") for n in nums]
    nums = _NUMBER_RE.findall(text)
    return ("last_number", [nums[-1].replace(" ", "")]) if nums else ("none", [])


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
        return {"gold_ok": False}
    parsed = [p(c) for c in cands]
    shown = [str(x[0]) if x else None for x in parsed]
    if not parsed[0]:
        return {"gold_ok": True, "parsed": shown, "consistent": True, "correct": False}
    consistent = all(bool(x) and verify(parsed[0], x, timeout_seconds=None) for x in parsed[1:])
    correct = bool(verify(g, parsed[0], timeout_seconds=None))
    return {"gold_ok": True, "parsed": shown, "gold": str(g[0]), "consistent": consistent, "correct": correct}


def _worker_main() -> None:
    """Worker loop: one JSON request per stdin line, one JSON reply per stdout line."""
    import logging  # the worker process's own setup

    logging.disable(logging.WARNING)  # math-verify warns on every call with timeouts disabled
    out = os.fdopen(os.dup(1), "w")
    sys.stdout = sys.stderr  # stray prints must never corrupt the reply channel
    import math_verify  # noqa: F401  (import before announcing readiness)

    _judge("1", ["1"])  # warm sympy's caches
    out.write('{"ready": true}\n')
    out.flush()
    for line in sys.stdin:
        try:
            req = json.loads(line)
            reply = _judge(req["gold"], req["cands"])
        except Exception as e:  # noqa: BLE001 - the parent turns this into a failed verdict
            reply = {"error": f"{type(e).__name__}: {e}"[:500]}
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
                [sys.executable, "-c", "from flywheel.verifiers.math import _worker_main; _worker_main()"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=env,
                close_fds=True,
            )
        except OSError as e:
            raise VerifierInfraError(f"cannot start math-verify worker: {e}") from e
        self._buf = b""
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
        return json.loads(line)

    def ask(self, req: dict, timeout_s: float) -> dict | None:
        try:
            self.proc.stdin.write((json.dumps(req) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            return None
        return self.readline(timeout_s)

    def kill(self) -> None:
        try:
            self.proc.kill()
            self.proc.wait(timeout=5)
        except Exception:  # noqa: BLE001
            pass


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

    def _discard(self, w: _Worker) -> None:
        w.kill()
        with self._lock:
            self._count -= 1
            if w in self._all:
                self._all.remove(w)

    def judge(self, gold: str, cands: list[str], timeout_s: float) -> dict | None:
        """The worker's reply, or None when it overran `timeout_s` (the worker is replaced)."""
        w = self._acquire()
        reply = w.ask({"gold": gold, "cands": cands}, timeout_s)
        if reply is None:
            alive = w.proc.poll() is None
            self._discard(w)
            if not alive:
                raise VerifierInfraError("math-verify worker died")
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
        gold = str(require(task, "answer")["answer"]).strip()
        if not gold:
            raise TaskError("task 'answer' is empty")
        text = text_to_judge(response)
        if len(text) > MAX_RESPONSE_CHARS:
            return failed("response too long", chars=len(text))
        method, cands = extract_candidates(text)
        details: dict[str, Any] = {"method": method, "candidates": cands[:MAX_CANDIDATES]}
        if not cands:
            return failed("no final answer found", **details)
        if len(cands) > MAX_CANDIDATES:
            return failed(f"several candidate answers ({len(cands)})", **details)
        if any(len(c) > MAX_ANSWER_CHARS for c in cands):
            return failed("final answer too long", **details)
        if any(not c for c in cands):
            return failed("empty final answer", **details)
        if not _HEDGE_WORD_RE.search(gold) and any(_HEDGE_WORD_RE.search(c) for c in cands):
            return failed("several candidate answers in one (hedged with 'or')", **details)
        reply = self.pool.judge(gold, cands, self.timeout_s)
        if reply is None:
            return failed(f"timeout: math-verify took over {self.timeout_s}s", cacheable=False, **details)
        if "error" in reply:
            return failed(f"answer could not be compared: {reply['error']}", **details)
        if not reply.get("gold_ok"):
            raise TaskError(f"reference answer {gold!r} does not parse")
        details.update(parsed=reply.get("parsed"), gold=reply.get("gold", gold))
        if not reply["consistent"]:
            return failed("several different candidate answers", **details)
        if reply["correct"]:
            return passed("answer matches reference", **details)
        return failed("answer does not match reference", **details)
