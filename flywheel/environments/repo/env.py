"""The `repo` environment: fix a small repository with file tools and a sandboxed test run.

    env = RepoEnvironment()                       # generated tasks (bug injection), domain "repo"
    task = env.tasks("repo", "train", 1, seed=0)[0]
    state = env.reset(task)                       # a private copy of the byte-identical snapshot
    env.step(state, ToolCall("run_tests", {}))    # the visible tests, in the sandbox
    verdict = env.verify(task, trajectory)        # replay the calls, judge the tree by the hidden tests

`verify` takes the trajectory as rollout text (`<tool_call>` blocks; claimed `<tool_result>`s are
ignored) or OpenAI messages (`tool_calls`), replays every call on a fresh copy of the snapshot (the
visible tests are not re-run: they cannot change the tree), fails on the first illegal call (the
process check), requires `submit`, and judges the final tree (`judge.judge_tree`). The verdict's
details carry `snapshot_sha256` (the start) and `final_sha256` (what was judged).
Users' own repositories: `RepoEnvironment.from_task_dirs(paths, domain="repo.mine")` (task_format.py).
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from flywheel.environments.base import (
    BaseEnvironment,
    Observation,
    ValidationCase,
    check_split,
    is_heldout,
    task_from_dict,
)
from flywheel.environments.judging import MAX_RESPONSE_CHARS, canonical
from flywheel.environments.repo import generator
from flywheel.environments.repo.judge import judge_tree, run_tests
from flywheel.environments.repo.probes import hack_probes, wrong_responses
from flywheel.environments.repo.spec import RepoSpec
from flywheel.environments.repo.tools import TOOLS, RepoState, apply_call
from flywheel.environments.task import Task
from flywheel.environments.toolcalls import RESULT_CLOSE, RESULT_OPEN, ToolCall
from flywheel.environments.toolschema import response_calls
from flywheel.environments.verdict import Verdict, failed

_HERE = Path(__file__).parent
VERSION = "repo-1-" + hashlib.sha256(b"".join(
    (_HERE / f).read_bytes() for f in ("_runner.py", "_remote.py", "judge.py", "tools.py", "spec.py", "env.py",
                                       "../code/_harness_rpc.py", "../code/_harness_values.py"))).hexdigest()[:8]
"""Changes whenever the runner, its call protocol, the judge, the tools or the replay change: cached verdicts are then re-scored."""
MAX_CALLS = 64
_RESULT_RE = re.compile(re.escape(RESULT_OPEN) + r".*?" + re.escape(RESULT_CLOSE), re.S)


def trajectory_calls(response: Any) -> list[ToolCall] | str:
    """The calls of a trajectory (text or OpenAI messages, also as a JSON string), or why there are none;
    in plain text, results read back are dropped first (a file read back may itself hold call text)."""
    return response_calls(response, text_filter=lambda t: _RESULT_RE.sub("", t))


class RepoEnvironment(BaseEnvironment):
    """Repository tasks judged by hidden tests in the sandbox (see the module docstring)."""

    name = "repo"
    version = VERSION
    family = "repo"

    def __init__(self, sandbox: Any = None, domain: str = generator.DOMAIN, task_list: Sequence[Task] | None = None,
                 max_calls: int = MAX_CALLS) -> None:
        self._sandbox = sandbox
        self._lock = threading.Lock()
        self.domain = domain
        self._fixed = list(task_list) if task_list is not None else None
        self.max_calls = max_calls
        if self._fixed is not None:
            self.name = domain

    @classmethod
    def from_task_dirs(cls, paths: Sequence[str | Path], domain: str, sandbox: Any = None) -> RepoEnvironment:
        """An environment serving users' task directories (`task_format.py`) as `domain`."""
        from flywheel.environments.repo.task_format import load_tasks

        return cls(sandbox=sandbox, domain=domain, task_list=load_tasks(paths, domain))

    @property
    def sandbox(self) -> Any:
        """The sandbox pool, started on first use (tests pass a warm pool in)."""
        if self._sandbox is None:
            with self._lock:
                if self._sandbox is None:
                    from flywheel.sandbox import get_pool

                    self._sandbox = get_pool(workers=2)
        return self._sandbox

    def shutdown(self) -> None:
        """Stop a sandbox pool this environment started itself (a passed-in one is the caller's)."""
        pool, self._sandbox = self._sandbox, None
        if pool is not None and hasattr(pool, "close"):
            pool.close()

    def domains(self) -> list[str]:
        return [self.domain]

    def levels(self, domain: str) -> tuple[int, ...]:
        return () if self._fixed is not None else generator.LEVELS

    def _check(self, domain: str, split: str, level: int | None) -> None:
        if domain != self.domain:
            raise ValueError(f"environment {self.name!r} serves domain {self.domain!r}, not {domain!r}")
        check_split(split)
        if level is not None and level not in self.levels(domain):
            raise ValueError(f"{domain}: level must be one of {self.levels(domain) or '(none)'}, got {level!r}")

    def _split_of(self, task: Task) -> str:
        return str(task.meta.get("split") or ("heldout" if is_heldout(task.task_id) else "train"))

    def tasks(self, domain: str, split: str, n: int, seed: int, level: int | None = None) -> list[Task]:
        self._check(domain, split, level)
        if self._fixed is None:
            return generator.generate(split, n, seed, level)
        import random

        pool = [t for t in self._fixed if self._split_of(t) == split]
        random.Random(f"{domain}|{split}|{seed}").shuffle(pool)
        return pool[:n]

    def task_count(self, domain: str, split: str) -> int | None:
        self._check(domain, split, None)
        if self._fixed is None:
            return generator.task_count(split)
        return sum(1 for t in self._fixed if self._split_of(t) == split)

    def tools(self, task: Task) -> list[dict[str, Any]]:
        return TOOLS

    def reference_solution(self, reference: dict[str, Any]) -> str:
        """The known fix of a logged task's reference as a trajectory ("" without one): mined tasks' gold."""
        from flywheel.environments.repo.sessions import gold_text

        return gold_text(reference)

    def reference_sql(self, reference: str) -> str:
        """A logged coding session whose reference holds the snapshot, hidden tests and test files (mining)."""
        return (f"json_type(json_extract({reference}, '$.files')) = 'OBJECT' "
                f"AND json_type(json_extract({reference}, '$.hidden_tests')) = 'OBJECT' "
                f"AND json_type(json_extract({reference}, '$.test_files')) = 'ARRAY'")

    def reset(self, task: Task) -> RepoState:
        spec = RepoSpec.from_reference(task.reference, f"task {task.task_id}")
        return RepoState.start(spec.snapshot, spec.test_files, spec.timeout_s)

    def _visible_tests(self, state: RepoState) -> str:
        present = [(p, state.files[p].decode("utf-8", errors="replace")) for p in state.test_files if p in state.files]
        missing = [p for p in state.test_files if p not in state.files]
        if not present:
            return "no visible test files left" + (f" (deleted: {', '.join(missing)})" if missing else "")
        tree = {p: b for p, b in state.files.items()}
        text = run_tests(self.sandbox, tree, present, state.timeout_s).summary()
        return text + (f"\nmissing test files: {', '.join(missing)}" if missing else "")

    def step(self, state: RepoState, call: ToolCall) -> Observation:
        return apply_call(state, call, self._visible_tests)

    def tool_env(self, task: Task) -> RepoToolEnv:
        """A `ToolEnv` (rollout/base.py) for `multistep_generate`: `call` raises on an illegal call."""
        return RepoToolEnv(self, self.reset(task))

    def verify(self, task: Task | dict[str, Any], response: Any) -> Verdict:
        t = task if isinstance(task, Task) else task_from_dict(self.domain, task)
        spec = RepoSpec.from_reference(t.reference, f"task {t.task_id or '?'}")
        size = len(response) if isinstance(response, str) else len(canonical(response))
        if size > MAX_RESPONSE_CHARS:
            return failed("response too long", chars=size, snapshot_sha256=spec.snapshot.sha256)
        calls = trajectory_calls(response)
        if isinstance(calls, str):
            return failed(calls, snapshot_sha256=spec.snapshot.sha256)
        if len(calls) > self.max_calls:
            return failed(f"{len(calls)} tool calls, more than {self.max_calls}", snapshot_sha256=spec.snapshot.sha256)
        state = RepoState.start(spec.snapshot, spec.test_files, spec.timeout_s)
        for i, call in enumerate(calls, 1):
            obs = apply_call(state, call, None)
            if obs.error:
                return failed(f"process check: call {i}: {obs.error}", calls=len(calls),
                              snapshot_sha256=spec.snapshot.sha256)
        if not state.done:
            return failed("the trajectory never called submit", calls=len(calls), snapshot_sha256=spec.snapshot.sha256)
        return judge_tree(spec, state.files, self.sandbox, calls=len(calls))

    def validation(self, task: Task) -> list[ValidationCase]:
        spec = RepoSpec.from_reference(task.reference, f"task {task.task_id}")
        cases = [ValidationCase("gold", "gold", task.solution), ValidationCase("wrong", "empty", "")]
        cases += [ValidationCase("wrong", name, r) for name, r in wrong_responses(spec)]
        cases += [ValidationCase("hack", name, r) for name, r in hack_probes(spec)]
        return cases


class RepoToolEnv:
    """The environment's tools for one rollout, in the rollout engine's `ToolEnv` shape."""

    def __init__(self, env: RepoEnvironment, state: RepoState) -> None:
        self.env, self.state = env, state

    @property
    def done(self) -> bool:
        return self.state.done

    def call(self, name: str, args: dict[str, Any]) -> str:
        obs = self.env.step(self.state, ToolCall(name, args))
        if obs.error:
            raise ValueError(obs.error)
        return obs.content
