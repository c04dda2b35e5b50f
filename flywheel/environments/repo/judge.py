"""Run test files against a repository tree in the sandbox, and judge a final tree by the hidden tests.

`run_tests` sends the tree as the work dir's files, and the test sources and the call protocol
(`RPC_SOURCE`) over stdin, to the trusted runner (`_runner.py`), which runs the tests in its own
process against the repository's code in another (values cross rebuilt as built-in types), then
reads its single nonce-marked line. `judge_tree` is the verdict:
1. a visible test file changed or deleted, or a `conftest.py`/`sitecustomize.py`/`.pth` added or
   changed, fails outright (the tests are the task; changing them is not solving it);
2. the judged tree is the final tree with every visible test restored from the pristine snapshot
   (byte-identical to what the model was given) and the hidden tests sent over stdin only;
3. it passes when every test the pristine sources define (found by parsing them here, not by
   trusting the runner) is reported exactly once, passed, and no file is left unreported.
A runner line missing, cut or doubled after the repository's code started is the code's failure, as
is a tree the tools would not have built (a path both a file and a folder); a runner that never
started is an infrastructure error (`VerifierInfraError`, retried, never scored).
"""

from __future__ import annotations

import ast
import hashlib
import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flywheel.environments import pyast
from flywheel.environments.code.verifier import RPC_SOURCE as CODE_RPC_SOURCE
from flywheel.environments.repo.snapshot import collision, tree_hash
from flywheel.environments.repo.spec import RepoSpec, forbidden
from flywheel.environments.verdict import Verdict, VerifierInfraError, failed, passed
from flywheel.sandbox.base import Limits

RUNNER_SOURCE = Path(__file__).with_name("_runner.py").read_text(encoding="utf-8")
RUNNER_SHA256 = hashlib.sha256(RUNNER_SOURCE.encode()).hexdigest()
RPC_SOURCE = CODE_RPC_SOURCE + "\n" + Path(__file__).with_name("_remote.py").read_text(encoding="utf-8")
"""The call protocol between the runner and the repository's process: the code judge's, plus object references."""
STARTUP_SLACK_S = 5.0


def expected_tests(source: str) -> list[str]:
    """Test names a file defines, read from its source: `test*` functions, `Test*` classes' `test*` methods."""
    try:
        tree = pyast.parse(source)  # judging threads parse at once: the 3.11 AST race (pyast)
    except (SyntaxError, ValueError):
        return []
    out: list[str] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            out.append(node.name)
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            out += [f"{node.name}.{m.name}" for m in node.body
                    if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and m.name.startswith("test")]
    return list(dict.fromkeys(out))


@dataclass
class FileResult:
    """One test file's outcome: which expected tests passed, which failed (with why)."""

    path: str
    passed: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    output: str = ""

    @property
    def ok(self) -> bool:
        return not self.failed and bool(self.passed)


@dataclass
class TestRun:
    """All files of one runner execution; `problem` says why the run as a whole is void (a forgery, a kill)."""

    files: list[FileResult]
    problem: str | None = None
    duration_s: float = 0.0

    @property
    def counts(self) -> tuple[int, int]:
        return sum(len(f.passed) for f in self.files), sum(len(f.passed) + len(f.failed) for f in self.files)

    @property
    def ok(self) -> bool:
        return self.problem is None and bool(self.files) and all(f.ok for f in self.files)

    def summary(self, max_chars: int = 4000) -> str:
        """Human text of the run (what the `run_tests` tool shows the model)."""
        n_ok, n = self.counts
        lines = [f"{n_ok}/{n} tests passed" + (f" ({self.problem})" if self.problem else "")]
        for f in self.files:
            lines.append(f"{f.path}: {len(f.passed)} passed, {len(f.failed)} failed")
            lines += [f"  FAILED {name}: {why}" for name, why in f.failed.items()]
            if f.output.strip() and f.failed:
                lines.append("  output: " + f.output.strip()[-600:])
        text = "\n".join(lines)
        return text if len(text) <= max_chars else text[: max_chars - 20] + "\n... (truncated)"


def _file_result(path: str, source: str, rep: dict[str, Any], ended: bool) -> FileResult:
    want = expected_tests(source)
    fr = FileResult(path, output=str(rep.get("output") or "")[-2000:])
    frames = [f for f in rep.get("frames") or [] if isinstance(f, dict) and f.get("f") == path]
    load = next((f["load_error"] for f in frames if "load_error" in f), None)
    seen: dict[str, int] = {}
    for f in frames:
        if isinstance(f.get("t"), str):
            seen[f["t"]] = seen.get(f["t"], 0) + 1
    results = {f["t"]: f for f in frames if isinstance(f.get("t"), str)}
    if not want:
        fr.failed["<file>"] = "defines no test functions" if load is None else f"does not load: {load}"
        return fr
    for name in want:
        f = results.get(name)
        if load is not None:
            fr.failed[name] = f"test file does not load: {load}"
        elif f is None:
            fr.failed[name] = ("timed out before it ran" if rep.get("timeout")
                               else f"not run: the test process exited (code {rep.get('exit')}) before reporting it")
        elif seen[name] != 1:
            fr.failed[name] = f"reported {seen[name]} times (forged report)"
        elif f.get("ok") is True and ended:
            fr.passed.append(name)
        else:
            fr.failed[name] = str(f.get("err") or "did not finish")[:400]
    extra = sorted(set(seen) - set(want))
    if extra:
        fr.failed["<report>"] = f"unexpected tests reported {extra[:5]} (forged report)"
    return fr


def run_tests(sandbox: Any, tree: Mapping[str, bytes], tests: list[tuple[str, str]], timeout_s: float) -> TestRun:
    """Run `tests` ((path, source) pairs) against `tree` in the sandbox; never raises on the tree's behaviour."""
    nonce = secrets.token_hex(16)
    cfg = {"nonce": nonce, "timeout_s": timeout_s, "tests": [list(t) for t in tests], "rpc_source": RPC_SOURCE}
    wall = timeout_s + STARTUP_SLACK_S
    res = sandbox.run(RUNNER_SOURCE, files=dict(tree), stdin=json.dumps(cfg), collect=("main.py",),
                      limits=Limits(wall_timeout_s=wall, cpu_time_s=wall, memory_mb=1024, max_processes=32,
                                    max_open_files=128))
    stdout_lines = res.stdout.splitlines()
    lines = [ln[len(nonce) + 1:] for ln in stdout_lines if ln.startswith(nonce + " ")]
    void = [FileResult(p, failed={"<file>": "not judged"}) for p, _ in tests]
    if len(lines) > 1:
        return TestRun(void, "forged result: more than one runner line", res.duration_s)
    got = (res.files or {}).get("main.py")
    if got is not None and hashlib.sha256(got if isinstance(got, bytes) else got.encode()).hexdigest() != RUNNER_SHA256:
        return TestRun(void, "the test runner (main.py) was changed", res.duration_s)
    if not lines:
        if nonce + "-started" in stdout_lines:
            why = res.killed_reason or f"exit {res.exit_code}"
            return TestRun(void, f"the test run was killed while the repository's code ran ({why})", res.duration_s)
        raise VerifierInfraError(f"repo test runner wrote no result (exit {res.exit_code}): {res.stderr[-500:]!r}")
    try:
        out = json.loads(lines[0])
    except json.JSONDecodeError as e:  # the runner had started the repository's code: a cut report is its doing
        return TestRun(void, f"the test report was cut or malformed ({e.msg}; output truncated: {res.truncated})",
                       res.duration_s)
    if not isinstance(out, dict):
        return TestRun(void, "the test report is not an object", res.duration_s)
    if out.get("status") == "harness_error":
        raise VerifierInfraError(f"repo test runner failed: {out.get('reason')}")
    if out.get("status") != "ok":
        return TestRun(void, f"the test run was disrupted: {out.get('reason')}", res.duration_s)
    frames = [f for f in out.get("frames") or [] if isinstance(f, dict)]
    ended = sum(1 for f in frames if f.get("end") is True) == 1
    files = [_file_result(p, s, out, ended) for p, s in tests]
    paths = {p for p, _ in tests}
    strays = [f for f in frames if f.get("end") is not True and f.get("f") not in paths]
    if strays or len(out.get("frames") or []) != len(frames):
        return TestRun(files, f"forged report: {len(strays) or 'malformed'} frame(s) not from any test file run",
                       res.duration_s)
    return TestRun(files, None, res.duration_s)


def tree_problems(spec: RepoSpec, final: Mapping[str, bytes]) -> list[str]:
    """Why `final` cannot be judged fairly: changed or deleted visible tests, added or changed test-config files."""
    out = []
    for t in spec.test_files:
        if t not in final:
            out.append(f"test file {t} was deleted")
        elif final[t] != spec.snapshot.files[t]:
            out.append(f"test file {t} was changed")
    for p, b in final.items():
        if forbidden(p) and spec.snapshot.files.get(p) != b:
            out.append(f"{p} was {'changed' if p in spec.snapshot.files else 'added'} (it alters test collection)")
    for p, _ in spec.hidden_tests:
        if p in final:
            out.append(f"{p} collides with a hidden test file")
    judged = {**final, **{t: b"" for t in spec.test_files}}  # the visible tests are restored into the tree
    out += [f"path {c}" for c in (collision(judged, p) for p in judged) if c][:3]
    return out


def judge_tree(spec: RepoSpec, final: Mapping[str, bytes], sandbox: Any, **details: Any) -> Verdict:
    """The verdict on a final tree (see the module docstring); `details` are added to the verdict's."""
    info = dict(details, snapshot_sha256=spec.snapshot.sha256, final_sha256=tree_hash(final))
    problems = tree_problems(spec, final)
    if problems:
        return failed("tests tampered with: " + "; ".join(problems[:3]), **info)
    judged = dict(final)
    judged.update({t: spec.snapshot.files[t] for t in spec.test_files})  # restored from the pristine snapshot
    tests = [(t, spec.snapshot.files[t].decode("utf-8", errors="replace")) for t in spec.test_files]
    tests += list(spec.hidden_tests)
    run = run_tests(sandbox, judged, tests, spec.timeout_s)
    n_ok, n = run.counts
    info.update(tests_passed=n_ok, tests_total=n, duration_s=round(run.duration_s, 4),
                failures=[f"{f.path}::{k}: {v}"[:300] for f in run.files for k, v in f.failed.items()][:10])
    if run.problem:
        return failed(run.problem, **info)
    if run.ok:
        return passed(f"all {n} tests passed", **info)
    return failed(f"{n - n_ok} of {n} tests failed", **info)
