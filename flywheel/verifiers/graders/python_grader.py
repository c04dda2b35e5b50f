"""`python` graders: the spec's `source` (defining `grade(sample, item) -> float`) runs in flywheel's sandbox,
never in this process, one fresh sandboxed process per grade.

The harness hands the grader the `sample` and `item` as JSON over stdin and reads one result line tagged with
a per-run nonce. A grader that raises on a sample scores that sample 0 (its reason says why: a grader choking on
a malformed answer is the answer's failure); a timeout scores 0 and is never cached; a harness that wrote no
result without being killed is an infrastructure error (retried). What this does not protect against: the
grader's own code and anything it `exec`s share one process, so a grader that runs the sample's code should
start a subprocess for it, or the sample could print a forged result line (two lines fail the grade).
"""

from __future__ import annotations

import json
import math
import secrets
from typing import Any

from flywheel.environments.verdict import TaskError, VerifierInfraError
from flywheel.sandbox.base import Limits
from flywheel.verifiers.graders.base import Graded, Runtime, need, threshold

MAX_SOURCE_CHARS = 256_000
HARNESS = '''
import json, sys
cfg = json.loads(sys.stdin.read())
nonce = cfg.pop("nonce")
ns = {"__name__": "grader"}
try:
    with open("grader.py", encoding="utf-8") as f:
        exec(compile(f.read(), "grader.py", "exec"), ns)
    fn = ns.get("grade")
    if not callable(fn):
        raise TypeError("the grader source defines no grade(sample, item)")
    out = {"score": float(fn(cfg["sample"], cfg["item"]))}
except BaseException as e:
    out = {"error": (type(e).__name__ + ": " + str(e))[:500]}
sys.stdout.flush()
print(nonce, json.dumps(out), flush=True)
'''


class PythonGrader:
    """`{"type": "python", "name", "source", "pass_threshold"?}`; `image_tag` is accepted and ignored (the
    sandbox's own interpreter runs it)."""

    kind = "python"
    low, high, binary = 0.0, 1.0, False

    def __init__(self, spec: dict[str, Any], runtime: Runtime) -> None:
        where = f"python grader {spec.get('name', '')!r}"
        self.name = str(spec.get("name") or "python")
        self.source = need(spec, "source", str, where)
        if len(self.source) > MAX_SOURCE_CHARS:
            raise TaskError(f"{where}: source longer than {MAX_SOURCE_CHARS} characters")
        if "def grade" not in self.source:
            raise TaskError(f"{where}: source defines no grade(sample, item)")
        self.pass_threshold = threshold(spec, where)
        self.runtime = runtime

    def grade(self, item: dict[str, Any], sample: dict[str, Any]) -> Graded:
        cfg = self.runtime.config
        nonce = secrets.token_hex(16)
        limits = Limits(wall_timeout_s=cfg.python_timeout_s, cpu_time_s=cfg.python_timeout_s,
                        memory_mb=cfg.python_memory_mb, max_processes=16)
        stdin = json.dumps({"nonce": nonce, "sample": sample, "item": item}, default=str)
        res = self.runtime.sandbox().run(HARNESS, files={"grader.py": self.source}, limits=limits, stdin=stdin)
        lines = [ln[len(nonce) + 1:] for ln in res.stdout.splitlines() if ln.startswith(nonce + " ")]
        if res.timed_out:
            return Graded(0.0, f"python grader {self.name!r}: timed out", cacheable=False)
        if len(lines) > 1:
            return Graded(0.0, f"python grader {self.name!r}: forged result (more than one result line)")
        if not lines:
            if res.killed_reason:
                return Graded(0.0, f"python grader {self.name!r}: killed by the sandbox ({res.killed_reason})")
            raise VerifierInfraError(f"python grader {self.name!r} wrote no result (exit {res.exit_code}): "
                                     f"{res.stderr[-300:]!r}")
        out = json.loads(lines[0])
        if "error" in out:
            return Graded(0.0, f"python grader {self.name!r} raised {out['error']}")
        score = out["score"]
        if not math.isfinite(score) or not 0.0 <= score <= 1.0:
            raise TaskError(f"python grader {self.name!r} returned {score}, outside [0, 1]")
        return Graded(score, f"python grader {self.name!r}: {score:g}")
