"""Code verifier: run the task's unit tests against the model's code inside the sandbox.

Task fields are HumanEval's: `prompt`, `entry_point`, `test` (defining `check(candidate)`).
The code is the response's fenced python block when it has one (the last block that defines
the entry point), else the whole response; a completion that only continues the prompt (the
HumanEval convention) is run as prompt + completion.

What makes it hard to game (see `_harness.py` for the mechanism):
- the tests never reach the model's process or the disk: a pristine copy travels from here to
  the trusted judge process over stdin, and the judge reports the sha256 of what it ran, which
  must equal the hash of the task's tests;
- the model's code runs in a separate process and only plain values cross back, so `__eq__`
  overrides, patched builtins/`assert`/unittest/pytest, `conftest.py`, `sys.exit(0)` and fake
  "PASSED" prints change nothing; what one process would share still crosses (in-place mutation
  of arguments, functions and generators as references, big ints, Fraction; `_harness_rpc.py`);
- the verdict is read from the single stdout line carrying a per-run random nonce the model's
  process never sees, from a judge that exited 0; two such lines (a forgery) fail;
- any file the model adds, edits or deletes in the work dir fails the verdict, and so does any
  change to the harness itself (hash of the collected `main.py`, where the backend writes it);
- the judge enforces the time limit itself, and the sandbox's wall clock backs it up;
- what the candidate can do to the judge (signal, kill, stop or `prlimit` it, overflow its work-dir
  walk, plant FIFOs, break the call protocol) fails the candidate: the judge marks the moment the
  candidate starts, and only a judge that broke before that mark (or a sandbox that did not
  start) is an infrastructure error. A timeout is always the candidate's 0 (never cached): the
  candidate can load the machine itself, so load alone cannot excuse it here.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import secrets
import threading
from pathlib import Path
from typing import Any

from flywheel.environments import pyast
from flywheel.environments.judging import MAX_RESPONSE_CHARS, require, text_to_judge
from flywheel.environments.verdict import TaskError, Verdict, VerifierInfraError, failed, passed
from flywheel.sandbox.base import Limits, Sandbox

_HERE = Path(__file__).parent
HARNESS_SOURCE = (_HERE / "_harness.py").read_text(encoding="utf-8")
"""The judge, run as `main.py`; the call protocol and the candidate's side travel to it over stdin."""
RPC_SOURCE = "\n".join((_HERE / f).read_text(encoding="utf-8") for f in ("_harness_values.py", "_harness_rpc.py"))
CHILD_SOURCE = (_HERE / "_harness_child.py").read_text(encoding="utf-8")
HARNESS_SHA256 = hashlib.sha256(HARNESS_SOURCE.encode()).hexdigest()
VERSION = "code-2-" + hashlib.sha256((HARNESS_SOURCE + RPC_SOURCE + CHILD_SOURCE).encode()).hexdigest()[:8]
"""Bumps whenever any part of the harness changes, so cached verdicts of an older judge are never reused."""

MAX_CODE_CHARS = 100_000
_FENCE_RE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.S)
_PY_TAGS = {"python", "python3", "py", ""}


def _parses(code: str) -> bool:
    try:
        pyast.parse(code)
        return True
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return False


def _defines(code: str, name: str) -> bool:
    try:
        tree = pyast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return False
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return True
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return True
    return False


def _prompt_imports(prompt: str) -> str:
    """The prompt's top-level imports (`from typing import List`), kept for a whole-function answer."""
    try:
        tree = pyast.parse(prompt)
        lines = [ast.get_source_segment(prompt, n) or "" for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        lines = [ln for ln in prompt.splitlines() if re.match(r"^(import\s+\w|from\s+[\w.]+\s+import\s)", ln)]
    return "".join(ln + "\n" for ln in lines if ln)


def extract_code(response: str, entry_point: str = "") -> str:
    """The code to run: the fenced python block defining the entry point (last one wins), else the text."""
    blocks = [(m.group(1).lower(), m.group(2)) for m in _FENCE_RE.finditer(response)]
    py = [b for tag, b in blocks if tag in _PY_TAGS]
    if not py:
        return response
    defining = [b for b in py if entry_point and _defines(b, entry_point)]
    return (defining or py)[-1]


def assemble(response: str, prompt: str, entry_point: str) -> tuple[str | None, str]:
    """(program, how) for the response; program None when no reading of it is valid Python."""
    code = extract_code(response, entry_point)
    if _defines(code, entry_point):
        return _prompt_imports(prompt) + code, "function"
    joined = prompt + code
    if prompt and _parses(joined) and _defines(joined, entry_point):
        return joined, "completion"
    if _parses(code):
        return _prompt_imports(prompt) + code, "code"
    return None, "syntax error"


def _syntax_error(code: str) -> str:
    try:
        pyast.parse(code)
    except SyntaxError as e:
        return f"syntax error: {e.msg} (line {e.lineno})"
    except (ValueError, RecursionError, MemoryError, OverflowError) as e:
        return f"syntax error: {type(e).__name__}"
    return "syntax error"


class CodeVerifier:
    """Task `{"prompt", "entry_point", "test"}`; passes when `check(candidate)` passes in the sandbox."""

    name = "code"
    version = VERSION

    def __init__(
        self,
        sandbox: Sandbox | None = None,
        timeout_s: float = 6.0,
        memory_mb: int = 512,
        startup_slack_s: float = 4.0,
    ) -> None:
        self._sandbox = sandbox
        self._lock = threading.Lock()
        self.timeout_s = timeout_s
        self.memory_mb = memory_mb
        self.startup_slack_s = startup_slack_s

    @property
    def sandbox(self) -> Sandbox:
        if self._sandbox is None:
            with self._lock:
                if self._sandbox is None:
                    from flywheel.sandbox import get_sandbox  # started on first use, not on import

                    self._sandbox = get_sandbox()
        return self._sandbox

    def limits(self) -> Limits:
        wall = self.timeout_s + self.startup_slack_s
        return Limits(wall_timeout_s=wall, cpu_time_s=wall, memory_mb=self.memory_mb, max_processes=16)

    def verify(self, task: dict[str, Any], response: Any) -> Verdict:
        require(task, "entry_point", "test")
        entry, test, prompt = str(task["entry_point"]), str(task["test"]), str(task.get("prompt") or "")
        if not entry.isidentifier():
            raise TaskError(f"entry_point {entry!r} is not a Python identifier")
        if "def check" not in test:
            raise TaskError("task test defines no check(candidate)")
        text = text_to_judge(response)
        if len(text) > MAX_RESPONSE_CHARS:
            return failed("response too long", chars=len(text))
        program, how = assemble(text, prompt, entry)
        if program is None:
            return failed(_syntax_error(extract_code(text, entry)), assembled=how)
        if len(program) > MAX_CODE_CHARS:
            return failed("code too long", chars=len(program))
        return self.run_program(program, prompt, entry, test, how)

    def run_program(self, program: str, prompt: str, entry: str, test: str, how: str = "function") -> Verdict:
        """Run one assembled program against the tests; the judge's own line decides."""
        nonce = secrets.token_hex(16)
        cfg = {"nonce": nonce, "timeout_s": self.timeout_s, "test": test, "prompt": prompt, "entry_point": entry,
               "rpc_source": RPC_SOURCE, "child_source": CHILD_SOURCE}
        res = self.sandbox.run(
            HARNESS_SOURCE,
            files={"solution.py": program},
            limits=self.limits(),
            stdin=json.dumps(cfg),
            collect=("main.py",),
        )
        return self._read_result(res, nonce, test, how)

    def _read_result(self, res: Any, nonce: str, test: str, how: str) -> Verdict:
        base = {"assembled": how, "exit_code": res.exit_code, "duration_s": round(res.duration_s, 4)}
        lines = [ln[len(nonce) + 1 :] for ln in res.stdout.splitlines() if ln.startswith(nonce + " ")]
        if res.timed_out or (res.killed_reason or "").startswith(("wall", "cpu", "time")):
            return failed(f"timeout: killed by the sandbox ({res.killed_reason or 'wall clock'})", cacheable=False, **base)
        if len(lines) > 1:
            return failed("forged verdict: more than one result line", **base)
        if not lines:
            if res.killed_reason:
                return failed(f"killed by the sandbox: {res.killed_reason}", **base)
            if any(ln == nonce + "-started" for ln in res.stdout.splitlines()):
                # the judge died after the candidate started: whatever did it, the candidate could have
                return failed(f"judge died while the candidate ran (exit {res.exit_code})", cacheable=False, **base)
            raise VerifierInfraError(
                f"code harness wrote no result (exit {res.exit_code}): {res.stderr[-500:]!r}"
            )
        try:
            out = json.loads(lines[0])
        except json.JSONDecodeError as e:
            raise VerifierInfraError(f"code harness result is not JSON: {e}") from e
        collected = getattr(res, "files", {}) or {}
        if "main.py" in collected:
            got = collected["main.py"]
            got = got.encode() if isinstance(got, str) else got
            if hashlib.sha256(got).hexdigest() != HARNESS_SHA256:
                return failed("work dir tampered with: harness main.py changed", **base)
        details = dict(
            base,
            calls=out.get("calls", 0),
            tamper=out.get("tamper", []),
            child_output=(out.get("child_output") or "")[-500:],
        )
        status = out.get("status")
        if status == "harness_error":
            raise VerifierInfraError(f"code harness failed: {out.get('reason')}")
        if status == "task_error":
            raise TaskError(str(out.get("reason")))
        if out.get("test_sha256") != hashlib.sha256(test.encode("utf-8")).hexdigest():
            return failed("test code was altered before it ran (hash mismatch)", **details)
        if res.exit_code != 0:
            return failed(f"judge exited with {res.exit_code}", **details)
        reason = str(out.get("reason") or status)
        if status == "passed" and not out.get("tamper"):
            return passed(reason, **details)
        if reason.startswith("timeout"):
            details["cacheable"] = False
        return failed(reason, **details)
