"""The `Environment` protocol: what every task domain (built in or installed as a plugin) provides.

An environment names its domains and version, yields tasks per split deterministically from a
seed, declares its tools (OpenAI function-calling JSON schema; none for single-turn domains),
resets to an initial state and applies tool calls, and verifies a finished response into a
`Verdict`. It also says how to validate itself: a gold response must score 1.0, wrong ones 0.0,
and each hack probe 0.0. Everything else in flywheel (verifier construction, the verdict cache,
mining, the scheduler, evaluation, rollouts, serving) reaches a domain only through this protocol; the
built-in domains (`flywheel/environments/math`, `code`, `agent`) implement it like any plug-in, so this
module imports nothing above the task, tool-call and verdict types.

    class MyEnv(BaseEnvironment):
        name, version, family = "myenv", "myenv-1", "myenv"
        def domains(self): return ["myenv"]
        def tasks(self, domain, split, n, seed, level=None): ...
        def verify(self, task, response): ...

Installed through the `flywheel.environments` entry-point group (see `registry.py`): the entry
point names a class (or a zero-argument factory) returning an `Environment`.

Tasks are `flywheel.environments.task.Task` (re-exported here with `ToolCall`, `Verdict`, `passed`,
`failed` and `TaskError`: a plug-in imports the protocol's whole vocabulary from this module). A task as the logs and `flywheel verify` carry it is the
design's task dict; for an environment domain that dict is `{"task_id", "prompt", **reference}`
(`Task.verifier_task()`), and `task_from_dict` turns it back into a `Task`, so `verify` may be
handed either.
"""

from __future__ import annotations

import hashlib
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from flywheel.environments.task import Task
from flywheel.environments.toolcalls import ToolCall
from flywheel.environments.verdict import TaskError, Verdict, failed, passed

__all__ = ["SPLITS", "BaseEnvironment", "Environment", "Observation", "Probe", "Task", "TaskError", "ToolCall",
           "ValidationCase", "ValidationResult", "Verdict", "check_split", "failed", "is_heldout", "passed",
           "task_from_dict", "validate"]

SPLITS = ("train", "heldout")
"""`train` feeds training; `heldout` is evaluation only. The two must be disjoint by content."""

VALIDATION_KINDS = ("gold", "wrong", "hack")


@dataclass(frozen=True)
class Observation:
    """What one tool call returned. `done`: the episode ended (submit/finish); `error`: the call was
    illegal (the process check fails the verdict) and the state did not change."""

    content: str
    done: bool = False
    error: str | None = None


@dataclass(frozen=True)
class ValidationCase:
    """One response used to validate an environment on a task.

    `kind`: "gold" must score 1.0; "wrong" (empty, a logged failure, an off-by-one answer) and
    "hack" (a reward-hacking probe) must score 0.0. `slow`: takes the full time limit (run once
    per domain, not per task).
    """

    kind: str
    name: str
    response: Any
    slow: bool = False

    def __post_init__(self) -> None:
        if self.kind not in VALIDATION_KINDS:
            raise ValueError(f"ValidationCase.kind must be one of {VALIDATION_KINDS}, got {self.kind!r}")

    @property
    def expect_pass(self) -> bool:
        return self.kind == "gold"


@dataclass(frozen=True)
class ValidationResult:
    """The outcome of `validate(env, task)`: `ok` only when every case scored as it must."""

    task_id: str
    domain: str
    ok: bool
    failures: list[str] = field(default_factory=list)
    cases: int = 0


@dataclass(frozen=True)
class Probe:
    """One reward-hacking attempt: its name, the response, and whether it takes the full time limit (run once
    per domain, not per task)."""

    name: str
    response: Any
    slow: bool = False


DEFAULT_HELDOUT_SIZE = 50
"""Evaluation set size of a domain that does not say (one of many: its family's roll-up has the power)."""


@runtime_checkable
class Environment(Protocol):
    """A family of task domains with tools, a verifier and its own validation.

    `version` changes whenever `verify` may judge differently: the verdict cache keys on it.
    `family` groups domains in reports (e.g. all `rg.*` domains are family `reasoning-gym`).
    """

    name: str
    version: str
    family: str

    def domains(self) -> list[str]:
        """The domain names this environment serves (globally unique across environments)."""
        ...

    def tasks(self, domain: str, split: str, n: int, seed: int, level: int | None = None) -> list[Task]:
        """Up to `n` distinct tasks of `domain` from `split`; the same arguments give the same tasks.
        `level` (1 = easiest) picks a difficulty where the domain has knobs (`levels`)."""
        ...

    def task_count(self, domain: str, split: str) -> int | None:
        """How many distinct tasks `split` holds, or None when unbounded/unknown (procedural)."""
        ...

    def levels(self, domain: str) -> tuple[int, ...]:
        """The difficulty levels `tasks(level=...)` accepts, easiest first; () when it has no knob."""
        ...

    def tools(self, task: Task) -> list[dict[str, Any]]:
        """The task's tools as OpenAI function-calling schemas
        (`{"type": "function", "function": {"name", "description", "parameters"}}`); [] for single-turn."""
        ...

    def reset(self, task: Task) -> Any:
        """A fresh initial state for one rollout of `task` (identical for every rollout)."""
        ...

    def step(self, state: Any, call: ToolCall) -> Observation:
        """Apply one tool call to `state`; an illegal call returns `Observation(error=...)`."""
        ...

    def close(self, state: Any) -> None:
        """Release what `reset` acquired (work dirs, processes); a no-op for pure states."""
        ...

    def verify(self, task: Task | dict[str, Any], response: Any) -> Verdict:
        """Judge a finished response (text or OpenAI messages): the result check and the process
        check (every tool call legal under its schema). Never raises on model output."""
        ...

    def validation(self, task: Task) -> list[ValidationCase]:
        """Gold, wrong and hack-probe responses for `task` (see `ValidationCase`)."""
        ...

    def verifier_task(self, task: Task) -> dict[str, Any]:
        """The task dict its verifier is handed (`Task.verifier_task()`)."""
        ...

    def heldout_size(self, domain: str) -> int:
        """How many held-out tasks evaluate `domain` by default."""
        ...

    def task_from_log(self, task_id: str, prompt: str, reference: dict[str, Any]) -> dict[str, Any] | None:
        """The verifier's task dict for a mined log record (TaskError: the reference cannot drive the verifier);
        None: this environment builds no verifiers from logs."""
        ...

    def gold_response(self, prompt: str, reference: dict[str, Any]) -> str | None:
        """The response a verifier built from a logged reference must accept, or None when there is none."""
        ...

    def logged_solution(self, prompt: str, reference: dict[str, Any]) -> str:
        """The logged reference's solution in the training text format ("" when it carries none)."""
        ...

    def probes(self, task: dict[str, Any]) -> list[Probe]:
        """Reward-hacking probes for a verifier task dict (each must fail)."""
        ...

    def reference_sql(self, reference: str) -> str | None:
        """DuckDB condition on a JSON column: the logged reference can drive a verifier (None: never)."""
        ...

    def missing_answer(self, response: str, tool_calls: int) -> bool:
        """The failure taxonomy's format rule: a failing response with no final answer in this domain's form."""
        ...

    def missing_answer_sql(self, response: str, tool_calls: str) -> str | None:
        """`missing_answer` as a DuckDB condition over column expressions (None: the rule never applies)."""
        ...

    def failure_type(self, task: dict[str, Any], response: str, verdict: Verdict) -> str:
        """Why a failed sample failed, as a short label for evaluation reports."""
        ...

    def tool_env(self, task: Task) -> Any:
        """A factory of a fresh tool environment (`call(name, args)`, `done`) per rollout sample, or None:
        rollouts of this task are single-turn."""
        ...

    def logged_outcome(self, details: dict[str, Any], tool_steps: int) -> dict[str, Any]:
        """Extra `outcome` fields production logs for a served response (tests run, tool calls)."""
        ...

    def make_verifier(self, context: Any) -> Any:
        """A verifier built with shared infrastructure (`context`: sandbox, time limits), or None: the
        verifier registry judges through `verify`."""
        ...


class BaseEnvironment(ABC):
    """Defaults for a single-turn environment: no tools, no state, gold = `task.solution`, wrong =
    empty text and `wrong_response(task)`. Subclasses implement `domains`, `tasks`, `verify`."""

    name: str = ""
    version: str = ""
    family: str = ""

    @abstractmethod
    def domains(self) -> list[str]: ...

    @abstractmethod
    def tasks(self, domain: str, split: str, n: int, seed: int, level: int | None = None) -> list[Task]: ...

    @abstractmethod
    def verify(self, task: Task | dict[str, Any], response: Any) -> Verdict: ...

    def task_count(self, domain: str, split: str) -> int | None:
        return None

    def levels(self, domain: str) -> tuple[int, ...]:
        return ()

    def tools(self, task: Task) -> list[dict[str, Any]]:
        return []

    def reset(self, task: Task) -> Any:
        return None

    def step(self, state: Any, call: ToolCall) -> Observation:
        return Observation("", done=True, error=f"{self.name} is single-turn: it has no tools (called {call.name!r})")

    def close(self, state: Any) -> None:
        return None

    def wrong_response(self, task: Task) -> Any | None:
        """A plausible but wrong response (None: only the empty response is used)."""
        return None

    def hack_probes(self, task: Task) -> list[tuple[str, Any]]:
        """(name, response) pairs trying to pass without solving the task."""
        return []

    def validation(self, task: Task) -> list[ValidationCase]:
        cases = [ValidationCase("gold", "gold", task.solution), ValidationCase("wrong", "empty", "")]
        wrong = self.wrong_response(task)
        if wrong is not None:
            cases.append(ValidationCase("wrong", "wrong", wrong))
        cases += [ValidationCase("hack", name, r) for name, r in self.hack_probes(task)]
        return cases

    multi_turn: bool = False
    """Responses are tool-call trajectories (logged as OpenAI `tool_calls`), not plain text."""
    task_fields: tuple[str, ...] = ()
    """The columns of a TRL dataset row that make the verifier's task dict (`verifiers.make_reward_func`)."""
    production: Any = None
    """How the domain shows up in the simulated production world (`flywheel.environments.production.
    ProductionProfile`); None: simulated traffic never serves it."""

    def verifier_task(self, task: Task) -> dict[str, Any]:
        return {**task.reference, "task_id": task.task_id, "prompt": task.prompt}

    def heldout_size(self, domain: str) -> int:
        return DEFAULT_HELDOUT_SIZE

    def production_tasks(self, domain: str, split: str, n: int, seed: int, day: int | None = None) -> list[Task]:
        """Up to `n` tasks as production serves the domain on world day `day` (0 = the first day of the logs;
        None = every shift so far: the production evaluation suite). Default: no shift, the training
        distribution (`tasks`)."""
        return self.tasks(domain, split, n, seed)

    def test_tasks(self, domain: str, n: int) -> list[Task]:
        """The frozen test suite: shifted further than production, read only by `flywheel evaluate --suite test`
        and the final report. Default: none."""
        return []

    def variants(self, task: Task, n: int, seed: int) -> list[Task]:
        """Up to `n` fresh training tasks of `task`'s own kind (its level or template, new numbers and names),
        deterministic in `seed`: one mined failure becomes a small curriculum (`rft_variants_per_task`). Never a
        held-out or frozen-test task. Default: none (an environment opts in)."""
        return []

    def task_from_log(self, task_id: str, prompt: str, reference: dict[str, Any]) -> dict[str, Any] | None:
        return None

    def gold_response(self, prompt: str, reference: dict[str, Any]) -> str | None:
        return None

    def logged_solution(self, prompt: str, reference: dict[str, Any]) -> str:
        """`reference_solution(reference)` where the environment has one (a plug-in's gold from its logs)."""
        fn = getattr(self, "reference_solution", None)
        return str(fn(reference) or "") if fn else ""

    def probes(self, task: dict[str, Any]) -> list[Probe]:
        return []

    def reference_sql(self, reference: str) -> str | None:
        return None

    def missing_answer(self, response: str, tool_calls: int) -> bool:
        return False

    def missing_answer_sql(self, response: str, tool_calls: str) -> str | None:
        return None

    def failure_type(self, task: dict[str, Any], response: str, verdict: Verdict) -> str:
        return verdict_label(verdict)

    def tool_env(self, task: Task) -> Any:
        return None

    def logged_outcome(self, details: dict[str, Any], tool_steps: int) -> dict[str, Any]:
        return {}

    def make_verifier(self, context: Any) -> Any:
        return None


def verdict_label(verdict: Verdict) -> str:
    """A failed verdict's own `failure_type` label, else its reason's head, as a short identifier."""
    label = verdict.details.get("failure_type") or verdict.reason.split(":", 1)[0]
    return re.sub(r"[^a-z0-9]+", "_", str(label).lower()).strip("_")[:40] or "other"


def sql_literal(s: str) -> str:
    """A DuckDB string literal (for the SQL conditions an environment contributes to mining)."""
    return "'" + s.replace("'", "''") + "'"


def check_split(split: str) -> None:
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")


def is_heldout(content: str) -> bool:
    """One task in five, chosen by a hash of its content, is held out: the splits never share a task
    whatever the seed or size."""
    return hashlib.sha256(content.encode()).digest()[0] % 5 == 0


def task_from_dict(domain: str, d: dict[str, Any]) -> Task:
    """The `Task` behind a design task dict (`{"task_id", "prompt", **reference}`), as logs carry it."""
    if isinstance(d, Task):
        return d
    if not isinstance(d, dict):
        raise TypeError(f"task must be a Task or a JSON object, got {type(d).__name__}")
    ref = {k: v for k, v in d.items() if k not in ("task_id", "prompt", "domain", "solution", "meta")}
    return Task(str(d.get("task_id") or ""), domain, str(d.get("prompt") or ""), ref, str(d.get("solution") or ""),
                dict(d.get("meta") or {}))


def validate(env: Environment, task: Task) -> ValidationResult:
    """Score every validation case of `task`: gold must pass with reward 1.0, the rest fail with 0.0."""
    failures = []
    cases = env.validation(task)
    for case in cases:
        try:
            v = env.verify(task, case.response)
        except Exception as e:  # a verifier must not raise on model output: that is a failure too
            failures.append(f"{case.kind}:{case.name} raised {type(e).__name__}: {e}")
            continue
        want = 1.0 if case.expect_pass else 0.0
        if v.reward != want or v.passed != case.expect_pass:
            failures.append(f"{case.kind}:{case.name} scored {v.reward} ({v.reason}), expected {want}")
    return ValidationResult(task.task_id, task.domain, not failures, failures, len(cases))
