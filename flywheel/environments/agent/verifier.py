"""Agent verifier: replay the trajectory's tool calls in a fresh environment and check the goal.

The response is either the rollout text (`<tool_call>{json}</tool_call>` blocks, with any
`<tool_result>` the text claims ignored: results come from the replay, not from the model) or
OpenAI messages (`tool_calls`, the legacy `function_call`, inline blocks in string or
list-of-parts content; a list, one message, or their JSON text; see `trajectory_calls`). The replay runs in a fresh
`InventoryEnv` from the task's `initial_state`. It fails on the first illegal call (unparseable
call, a tool the task does not offer, bad arguments, any call after `finish`), when the episode
never ends with `finish`, when the end state misses the `goal`, and when an item outside the
goal was changed (side effects count: the goal is the target inventory).

A failed replay also carries `item_share` in its details: the share of the task's items it got right (see
`item_share`), what an RL run may take as a partial-credit reward; `passed` and `reward` stay binary.
"""

from __future__ import annotations

import json
from typing import Any

from flywheel.environments.agent.inventory import IllegalCall, InventoryEnv
from flywheel.environments.judging import MAX_RESPONSE_CHARS, canonical, parts_text, require
from flywheel.environments.toolcalls import RESULT_CLOSE, RESULT_OPEN, ToolCall, parse_calls
from flywheel.environments.verdict import TaskError, Verdict, failed, passed

VERSION = "agent-3"
MAX_CALLS = 64


def _structured_call(tc: Any) -> ToolCall:
    """One OpenAI `tool_calls` entry (`{"function": {"name", "arguments"}}`) or a legacy `function_call`.

    `arguments` may be an object, a JSON string, or empty (`""`, whitespace, `null`, absent): an empty
    one means no arguments, as OpenAI-compatible servers send for a tool without parameters.
    """
    fn = tc.get("function", tc) if isinstance(tc, dict) else None
    if not isinstance(fn, dict):
        return ToolCall("", {}, str(tc)[:200], "tool call must be an object with a 'function'")
    name, args = fn.get("name"), fn.get("arguments")
    raw = canonical({"name": name, "arguments": args})[:2000]
    if not isinstance(name, str) or not name:
        return ToolCall("", {}, raw, "tool call must have a string 'name'")
    if isinstance(args, str):
        if not args.strip():
            args = None
        else:
            try:
                args = json.loads(args)
            except (json.JSONDecodeError, RecursionError) as e:
                return ToolCall(name, {}, raw, f"tool call arguments are not valid JSON: {e}")
    if args is None:
        args = {}
    if not isinstance(args, dict):
        return ToolCall(name, {}, raw, "tool call 'arguments' must be an object")
    return ToolCall(name, args, raw)


def _message_calls(messages: list[Any]) -> list[ToolCall]:
    """Calls of an OpenAI conversation, in order: each assistant message's `tool_calls`, its legacy
    `function_call` (the pre-tools format), then `<tool_call>` blocks in its content (text or parts)."""
    out: list[ToolCall] = []
    for m in messages:
        if not isinstance(m, dict) or m.get("role", "assistant") != "assistant":
            continue
        structured = m.get("tool_calls") or []
        if not isinstance(structured, list):
            structured = [structured]
        legacy = m.get("function_call")
        out.extend(_structured_call(tc) for tc in [*structured, *([legacy] if legacy else [])])
        text = parts_text(m.get("content"))
        if text:
            out.extend(parse_calls(text))
    return out


def _decode_json(text: str) -> Any:
    """A response given as JSON text (messages, one message, content parts), else None."""
    s = text.strip()
    if not s.startswith(("[", "{")):
        return None
    try:
        obj = json.loads(s)
    except (json.JSONDecodeError, RecursionError):
        return None
    return obj if isinstance(obj, (list, dict)) else None


def trajectory_calls(response: Any) -> list[ToolCall] | str:
    """The trajectory's calls, or a reason string when the response has no usable shape.

    Accepted: rollout text with `<tool_call>` blocks; OpenAI messages (a list, one message, or their
    JSON text) with `tool_calls`, legacy `function_call` or inline blocks in string or list-of-parts
    content; a bare list of content parts.
    """
    if isinstance(response, str):
        decoded = _decode_json(response)
        if isinstance(decoded, list) and decoded and all(isinstance(m, dict) for m in decoded):
            return trajectory_calls(decoded)
        if isinstance(decoded, dict) and ({"role", "tool_calls", "function_call"} & set(decoded)):
            return trajectory_calls(decoded)
        return parse_calls(response)
    if isinstance(response, dict):
        return _message_calls([response])
    if isinstance(response, list) and all(isinstance(m, dict) for m in response):
        if response and all("role" not in m and "type" in m for m in response):
            return parse_calls(parts_text(response) or "")  # the content parts themselves
        return _message_calls(response)
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


def item_share(initial: dict[str, int], goal: dict[str, int], env: InventoryEnv) -> float:
    """Share of the task's items right in `env`'s state (a replay, stopped at its first illegal call): each
    item the goal changes is right at its goal count, finishing counts as one more item, and every item
    left away from its goal or initial count (a side effect) counts as one more item wrong. 1.0 only when
    the goal is reached with nothing else touched and the episode finished."""
    def target(k: str) -> int:
        return goal[k] if k in goal else initial.get(k, 0)

    to_change = [k for k, v in goal.items() if v != initial.get(k, 0)]
    strayed = [k for k in {*goal, *env.state} if k not in to_change and env.state.get(k, 0) != target(k)]
    right = sum(env.state.get(k, 0) == goal[k] for k in to_change) + int(env.done)
    return right / (len(to_change) + len(strayed) + 1)


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
        calls = trajectory_calls(response)
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
                why = c.error
            elif c.name not in tools:
                why = f"tool {c.name!r} is not offered by the task"
            else:
                try:
                    results.append(env.call(c.name, c.arguments))
                    continue
                except IllegalCall as e:
                    why = str(e)
                except Exception as e:  # noqa: BLE001 - odd argument types must fail, never crash the judge
                    why = f"{type(e).__name__}: {e}"
            return failed(f"illegal call #{i + 1}: {why}", step=i, item_share=item_share(initial, goal, env), **details)
        details["end_state"] = dict(env.state)
        details["item_share"] = item_share(initial, goal, env)
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
