"""agent: the inventory tool environment (add/remove/check/finish towards a goal inventory; levels = changes:
SFT 1-3, production 4-6, test 7).

Everything agent is here: the tool environment (`inventory.py`), the tasks with their gold trajectories
(`tasks.py`), the worked plan an SFT target may carry before each call (`plan.py`), the replaying verifier
(`verifier.py`), hack probes (`probes.py`) and failure types (`failures.py`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

from flywheel.environments.agent.failures import agent_failure
from flywheel.environments.agent.inventory import TOOLS, IllegalCall, InventoryEnv
from flywheel.environments.agent.production import PROFILE
from flywheel.environments.agent.tasks import PRODUCTION_LEVELS, SFT_LEVELS, TEST_LEVELS
from flywheel.environments.base import Observation, Probe, task_from_dict
from flywheel.environments.judging import require
from flywheel.environments.suite import SuiteEnvironment
from flywheel.environments.task import Task
from flywheel.environments.toolcalls import CALL_OPEN, ToolCall
from flywheel.environments.toolschema import function_tool, process_error, response_calls
from flywheel.environments.verdict import Verdict, failed


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


def inventory_tools(reference: dict[str, Any]) -> Callable[[], InventoryEnv]:
    """The tool factory of an agent task: a fresh `InventoryEnv` from its `initial_state` per sample."""
    initial = dict(reference["initial_state"])
    return lambda: InventoryEnv.from_initial(initial)


class AgentEnvironment(SuiteEnvironment):
    """The inventory tool environment: add/remove/check/finish towards a goal inventory; levels = changes."""

    name = "agent"
    production = PROFILE
    task_fields = ("prompt", "tools", "initial_state", "goal")
    levels_ = SFT_LEVELS
    heldout_tasks = 60
    multi_turn = True
    production_levels = MappingProxyType(PRODUCTION_LEVELS)
    test_levels = TEST_LEVELS

    def suite(self, n: int, seed: int, level: int | None, keep: Callable[[Task], bool]) -> list[Task]:
        from flywheel.environments.agent.tasks import agent_suite

        return agent_suite(n, seed, levels=(level,) if level else SFT_LEVELS, keep=keep)

    def task_level(self, task: Task) -> int | None:
        from flywheel.environments.agent.tasks import task_level

        ref = task.reference or {}
        try:
            return super().task_level(task) or task_level(dict(ref["initial_state"]), dict(ref["goal"]))
        except (KeyError, TypeError, ValueError, StopIteration):
            return None  # a reference that is no inventory task of any level

    def make_verifier(self, context: Any) -> Any:
        from flywheel.environments.agent.verifier import AgentVerifier

        return AgentVerifier()

    def verifier_task(self, task: Task) -> dict[str, Any]:
        ref = task.reference
        return {"task_id": task.task_id, "prompt": task.prompt, "tools": ref["tools"],
                "initial_state": ref["initial_state"], "goal": ref["goal"]}

    def tools(self, task: Task) -> list[dict[str, Any]]:
        return openai_tools(task.reference.get("tools") or TOOLS)

    def reset(self, task: Task) -> Any:
        return InventoryEnv.from_initial(copy.deepcopy(task.reference["initial_state"]))

    def step(self, state: Any, call: ToolCall) -> Observation:
        if call.error:
            return Observation("", done=state.done, error=call.error)
        try:
            out = state.call(call.name, call.arguments)
        except IllegalCall as e:
            return Observation("", done=state.done, error=str(e))
        return Observation(out, done=state.done)

    def verify(self, task: Task | dict[str, Any], response: Any) -> Verdict:
        """The replaying verifier's verdict, then the process check against the OpenAI schemas too."""
        v = super().verify(task, response)
        if not v.passed:
            return v
        calls = response_calls(response)
        t = task if isinstance(task, Task) else task_from_dict(self.name, task)
        err = process_error(self.tools(t), calls) if isinstance(calls, list) else calls
        return failed(f"process check: {err}", **v.details) if err else v

    def probes(self, task: dict[str, Any]) -> list[Probe]:
        from flywheel.environments.agent.probes import agent_probes

        return agent_probes(task)

    def task_from_log(self, task_id: str, prompt: str, reference: dict[str, Any]) -> dict[str, Any]:
        require(reference, "initial_state", "goal")
        return {"task_id": task_id, "prompt": prompt, "tools": reference.get("tools") or TOOLS,
                "initial_state": reference["initial_state"], "goal": reference["goal"]}

    def gold_response(self, prompt: str, reference: dict[str, Any]) -> str | None:
        from flywheel.environments.agent.tasks import gold_trajectory, render_trajectory

        try:
            initial = reference["initial_state"]
            return render_trajectory(initial, gold_trajectory(initial, reference["goal"]))
        except Exception:  # noqa: BLE001 - a goal the environment cannot reach: no gold
            return None

    def logged_solution(self, prompt: str, reference: dict[str, Any]) -> str:
        from flywheel.environments.agent.tasks import render_trajectory

        if reference.get("solution_calls") is None:
            return ""
        calls = [(c[0], dict(c[1])) for c in reference["solution_calls"]]
        return render_trajectory(reference["initial_state"], calls)

    def reference_sql(self, reference: str) -> str:
        return (f"json_extract({reference}, '$.tools') IS NOT NULL AND json_extract({reference}, '$.initial_state') "
                f"IS NOT NULL AND json_extract({reference}, '$.goal') IS NOT NULL")

    def missing_answer(self, response: str, tool_calls: int) -> bool:
        return tool_calls == 0 and CALL_OPEN not in response

    def missing_answer_sql(self, response: str, tool_calls: str) -> str:
        return f"{tool_calls} = 0 AND NOT contains({response}, '{CALL_OPEN}')"

    def failure_type(self, task: dict[str, Any], response: str, verdict: Verdict) -> str:
        return agent_failure(verdict.reason)

    def tool_env(self, task: Task) -> Any:
        return inventory_tools(task.reference)

    def logged_outcome(self, details: dict[str, Any], tool_steps: int) -> dict[str, Any]:
        return {"tool_calls": tool_steps}
