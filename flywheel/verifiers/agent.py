"""Agent verifier: replay the trajectory's tool calls in a fresh environment and check the goal.

The response is either the rollout text (`<tool_call>{json}</tool_call>` blocks, with any
`<tool_result>` the text claims ignored: results come from the replay, not from the model) or
OpenAI messages (`tool_calls` fields and inline blocks). The replay runs in a fresh
`InventoryEnv` from the task's `initial_state`. It fails on the first illegal call (unparseable
call, a tool the task does not offer, bad arguments, any call after `finish`), when the episode
never ends with `finish`, when the end state misses the `goal`, and when an item outside the
goal was changed (side effects count: the goal is the target inventory).
"""

from __future__ import annotations

import json
from typing import Any

from flywheel.tasks.agent_env import IllegalCall, InventoryEnv
from flywheel.tasks.toolcalls import RESULT_CLOSE, RESULT_OPEN, ToolCall, calls_from_messages, parse_calls
from flywheel.verifiers.common import MAX_RESPONSE_CHARS, TaskError, failed, passed, require
from flywheel.verifiers.verdict import Verdict

VERSION = "agent-1"
MAX_CALLS = 64


def _calls(response: Any) -> list[ToolCall] | str:
    """The trajectory's calls, or a reason string when the response has no usable shape."""
    if isinstance(response, str):
        stripped = response.strip()
        if stripped.startswith("[") and '"role"' in stripped[:200]:
            try:
                msgs = json.loads(stripped)
            except json.JSONDecodeError:
                msgs = None
            if isinstance(msgs, list):
                return _calls(msgs)
        return parse_calls(response)
    if isinstance(response, list) and all(isinstance(m, dict) for m in response):
        try:
            return calls_from_messages(response)
        except (AttributeError, TypeError) as e:
            return f"malformed messages: {e}"
    return f"response must be text or a list of messages, got {type(response).__name__}"


def _claimed_results(text: str) -> list[str]:
    out, i = [], 0
    while True:
        a = text.find(RESULT_OPEN, i)
        if a < 0:
            return out
        b = text.find(RESULT_CLOSE, a)
        if b < 0:
            return out
        out.append(text[a + len(RESULT_OPEN) : b])
        i = b + len(RESULT_CLOSE)


def _task_parts(task: dict[str, Any]) -> tuple[set[str], dict[str, int], dict[str, int]]:
    require(task, "initial_state", "goal")
    tools = task.get("tools") or []
    names = {t["name"] if isinstance(t, dict) else str(t) for t in tools}
    initial, goal = task["initial_state"], task["goal"]
    if not isinstance(initial, dict) or not isinstance(goal, dict):
        raise TaskError("'initial_state' and 'goal' must be objects of item -> count")
    if not names:
        raise TaskError("task offers no tools")
    return names, dict(initial), dict(goal)


class AgentVerifier:
    """Task `{"prompt", "tools", "initial_state", "goal"}`; passes when the replay reaches the goal."""

    name = "agent"
    version = VERSION

    def __init__(self, max_calls: int = MAX_CALLS) -> None:
        self.max_calls = max_calls

    def verify(self, task: dict[str, Any], response: Any) -> Verdict:
        tools, initial, goal = _task_parts(task)
        if isinstance(response, str) and len(response) > MAX_RESPONSE_CHARS:
            return failed("response too long", chars=len(response))
        calls = _calls(response)
        if isinstance(calls, str):
            return failed(calls)
        details: dict[str, Any] = {"calls": len(calls)}
        if not calls:
            return failed("no tool calls", **details)
        if len(calls) > self.max_calls:
            return failed(f"too many tool calls ({len(calls)} > {self.max_calls})", **details)
        env = InventoryEnv.from_initial(initial)
        results: list[str] = []
        for i, c in enumerate(calls):
            if c.error:
                return failed(f"illegal call #{i + 1}: {c.error}", step=i, **details)
            if c.name not in tools:
                return failed(f"illegal call #{i + 1}: tool {c.name!r} is not offered by the task", step=i, **details)
            try:
                results.append(env.call(c.name, c.arguments))
            except IllegalCall as e:
                return failed(f"illegal call #{i + 1}: {e}", step=i, **details)
            except Exception as e:  # noqa: BLE001 - odd argument types must fail, never crash the judge
                return failed(f"illegal call #{i + 1}: {type(e).__name__}: {e}", step=i, **details)
        details["end_state"] = dict(env.state)
        if isinstance(response, str):
            claimed = _claimed_results(response)
            details["claimed_results_match"] = claimed == results[: len(claimed)]
        if not env.done:
            return failed("episode not finished: the trajectory never calls finish", **details)
        if not env.goal_reached(goal):
            wrong = {k: env.state.get(k, 0) for k, v in goal.items() if env.state.get(k, 0) != v}
            return failed(f"goal not reached: {wrong} (goal {goal})", **details)
        side = {k: v for k, v in env.state.items() if k not in goal and v != initial.get(k, 0)}
        if side:
            return failed(f"changed items outside the goal: {side}", **details)
        return passed("goal reached", **details)
