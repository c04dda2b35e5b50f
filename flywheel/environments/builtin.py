"""math, code and agent as environments: the existing suites and verifiers behind the protocol.

Each wraps, without changing them, its task generator (`flywheel/tasks/*_tasks.py`), its verifier
(built by `VerifierRegistry`, which knows the sandbox pool and time limits) and its hack probes
(`flywheel/verifiers/hacks.py`). The split is the suites' own (a hash of the prompt), so
`tasks(d, "heldout", ...)` and `flywheel.tasks.suites.heldout_suite(d)` agree.
"""

from __future__ import annotations

import copy
from typing import Any

from flywheel.environments.base import (
    BaseEnvironment,
    Observation,
    ValidationCase,
    check_split,
    task_from_dict,
)
from flywheel.environments.toolschema import function_tool, process_error, response_calls
from flywheel.tasks.base import Task
from flywheel.tasks.toolcalls import ToolCall
from flywheel.verifiers.verdict import Verdict


def _verifiers() -> Any:
    from flywheel.verifiers.registry import default_registry  # the registry falls back to environments

    return default_registry()


class _Builtin(BaseEnvironment):
    """One built-in domain: the environment's name is the domain's."""

    family = "builtin"
    _levels: tuple[int, ...] = ()

    def __init__(self, verifiers: Any = None) -> None:
        self._reg = verifiers

    @property
    def version(self) -> str:  # type: ignore[override]
        """The wrapped verifier's version (the code verifier's includes its harness hash)."""
        return self._registry().version(self.name)

    def _registry(self) -> Any:
        return self._reg if self._reg is not None else _verifiers()

    def domains(self) -> list[str]:
        return [self.name]

    def levels(self, domain: str) -> tuple[int, ...]:
        return self._levels

    def _check(self, domain: str, split: str, level: int | None) -> None:
        if domain != self.name:
            raise ValueError(f"environment {self.name!r} serves only domain {self.name!r}, not {domain!r}")
        check_split(split)
        if level is not None and level not in self._levels:
            raise ValueError(f"{domain}: level must be one of {self._levels or '(none: no difficulty knob)'}, "
                             f"got {level!r}")

    def tasks(self, domain: str, split: str, n: int, seed: int, level: int | None = None) -> list[Task]:
        from flywheel.tasks.suites import is_heldout_prompt

        self._check(domain, split, level)
        want = split == "heldout"
        return self._suite(n, seed, level, lambda t: is_heldout_prompt(t.prompt) == want)

    def _suite(self, n: int, seed: int, level: int | None, keep: Any) -> list[Task]:
        raise NotImplementedError

    def verify(self, task: Task | dict[str, Any], response: Any) -> Verdict:
        vt = task.verifier_task() if isinstance(task, Task) else task
        return self._registry().get(self.name).verify(vt, response)

    def validation(self, task: Task) -> list[ValidationCase]:
        from flywheel.verifiers.hacks import probes

        cases = [ValidationCase("gold", "gold", task.solution), ValidationCase("wrong", "empty", "")]
        wrong = self.wrong_response(task)
        if wrong is not None:
            cases.append(ValidationCase("wrong", "wrong", wrong))
        cases += [ValidationCase("hack", p.name, p.response, p.slow) for p in probes(self.name, task.verifier_task())]
        return cases


class MathEnvironment(_Builtin):
    """Templated word problems with numeric answers; levels 1-3 (number size, then two operations)."""

    name = "math"
    _levels = (1, 2, 3)

    def _suite(self, n: int, seed: int, level: int | None, keep: Any) -> list[Task]:
        from flywheel.tasks.math_tasks import math_suite

        return math_suite(n, seed, levels=(level,) if level else (1, 2, 3), keep=keep)

    def wrong_response(self, task: Task) -> str:
        a = str(task.reference["answer"]).strip()
        return f"Answer: {int(a) + 1}" if a.lstrip("-").isdigit() else "Answer: 0"


class CodeEnvironment(_Builtin):
    """Small Python functions in HumanEval's format, judged in the sandbox by their `check`."""

    name = "code"

    def _suite(self, n: int, seed: int, level: int | None, keep: Any) -> list[Task]:
        from flywheel.tasks.code_tasks import code_suite

        return code_suite(n, seed, keep=keep)

    def wrong_response(self, task: Task) -> str:
        entry = task.reference["entry_point"]
        return f"```python\ndef {entry}(*args, **kwargs):\n    return None\n```"


def openai_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The inventory environment's compact tool list (`{"name", "description", "parameters": {arg: "str"|"int>0"}}`)
    as OpenAI function schemas."""
    kinds = {"str": {"type": "string", "minLength": 1}, "int>0": {"type": "integer", "minimum": 1}}
    out = []
    for t in tools:
        if t.get("type") == "function":
            out.append(t)
            continue
        props = {k: dict(kinds.get(v, {})) for k, v in (t.get("parameters") or {}).items()}
        out.append(function_tool(t["name"], t.get("description", ""), props))
    return out


class AgentEnvironment(_Builtin):
    """The inventory tool environment: add/remove/check/finish towards a goal inventory; levels = changes."""

    name = "agent"
    _levels = (1, 2, 3)

    def _suite(self, n: int, seed: int, level: int | None, keep: Any) -> list[Task]:
        from flywheel.tasks.agent_tasks import agent_suite

        return agent_suite(n, seed, changes=(level,) if level else (1, 2, 3), keep=keep)

    def tools(self, task: Task) -> list[dict[str, Any]]:
        from flywheel.tasks.agent_env import TOOLS

        return openai_tools(task.reference.get("tools") or TOOLS)

    def reset(self, task: Task) -> Any:
        from flywheel.tasks.agent_env import InventoryEnv

        return InventoryEnv.from_initial(copy.deepcopy(task.reference["initial_state"]))

    def step(self, state: Any, call: ToolCall) -> Observation:
        from flywheel.tasks.agent_env import IllegalCall

        if call.error:
            return Observation("", done=state.done, error=call.error)
        try:
            out = state.call(call.name, call.arguments)
        except IllegalCall as e:
            return Observation("", done=state.done, error=str(e))
        return Observation(out, done=state.done)

    def verify(self, task: Task | dict[str, Any], response: Any) -> Verdict:
        """The replaying verifier's verdict, then the process check against the OpenAI schemas too."""
        from flywheel.verifiers.common import failed

        v = super().verify(task, response)
        if not v.passed:
            return v
        calls = response_calls(response)
        t = task if isinstance(task, Task) else task_from_dict(self.name, task)
        err = process_error(self.tools(t), calls) if isinstance(calls, list) else calls
        return failed(f"process check: {err}", **v.details) if err else v
