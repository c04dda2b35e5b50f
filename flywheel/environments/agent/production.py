"""agent in simulated production: inventory users, and the made-up model's trajectories (played on the real
tool environment, so a logged failure really misses the goal), with the runtime's real tracebacks."""

from __future__ import annotations

import functools
import json
import linecache
import random
from collections.abc import Sequence
from typing import Any

from flywheel.environments.agent.inventory import IllegalCall, InventoryEnv
from flywheel.environments.agent.tasks import SMALL_MAX
from flywheel.environments.production import (
    REFUSALS,
    RUN_SLOT,
    ProductionProfile,
    compile_with_source,
    fill_run,
    format_exc,
    outcome,
)
from flywheel.environments.task import Task

_AGENT_FILE = f"/srv/agent-runtime/{RUN_SLOT}/dispatch.py"
_AGENT_SRC = '''import json


def parse_arguments(call):
    """Decode the arguments of an OpenAI tool call."""
    return json.loads(call["function"]["arguments"])


def dispatch(env, call):
    args = parse_arguments(call)
    return env.call(call["function"]["name"], args)
'''


def difficulty(task: Task) -> float:
    """0 (easy) .. 1 (hard) from how many items the goal changes (a big goal count as one more)."""
    big = any(v > SMALL_MAX for v in (task.reference or {}).get("goal", {}).values())
    return min(1.0, (int((task.meta or {}).get("changes", 2)) - 1 + int(big)) / 2)


@functools.lru_cache(maxsize=1024)
def _agent_dispatch_error(call_json: str) -> str:
    """The traceback the agent runtime prints when it cannot decode a tool call."""
    ns: dict[str, Any] = {}
    try:
        exec(compile_with_source(_AGENT_SRC, _AGENT_FILE), ns)  # noqa: S102
        try:
            ns["dispatch"](None, json.loads(call_json))
        except Exception as e:
            return format_exc(e, 1)
        raise AssertionError("dispatch of a broken call did not fail")
    finally:
        linecache.cache.pop(_AGENT_FILE, None)


def _tool_call_msg(i: int, name: str, arguments: str, content: str | None = None) -> dict[str, Any]:
    return {"role": "assistant", "content": content, "tool_calls": [
        {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": arguments}}]}


def _play(initial: dict[str, int], calls: Sequence[tuple[str, dict]]) -> tuple[list[dict], InventoryEnv, str | None]:
    """Run calls on the environment, logging messages; stops at the first illegal call."""
    env = InventoryEnv.from_initial(initial)
    msgs: list[dict] = []
    for i, (name, args) in enumerate(calls):
        msgs.append(_tool_call_msg(i, name, json.dumps(args, separators=(",", ":"))))
        try:
            result = env.call(name, args)
        except IllegalCall as e:
            msgs.append({"role": "tool", "tool_call_id": f"call_{i}", "content": f"Error: {e}"})
            return msgs, env, str(e)
        msgs.append({"role": "tool", "tool_call_id": f"call_{i}", "content": result})
    return msgs, env, None


def respond(task: Task, mode: str, rng: random.Random) -> tuple[list[dict], dict]:
    ref = task.reference
    initial, goal = ref["initial_state"], ref["goal"]
    gold = [(c[0], dict(c[1])) for c in ref["solution_calls"]]
    if mode == "refused":
        return [{"role": "assistant", "content": rng.choice(REFUSALS)}], outcome(mode, tool_calls=0)
    if mode == "format_error":
        plan = ", ".join(f"{a['item']} by {a['qty']}" for n, a in gold if n != "finish") or "nothing"
        text = f"To reach the goal you should change {plan}, and then you are done."
        return [{"role": "assistant", "content": text}], outcome(mode, tool_calls=0, goal_reached=False)
    if mode == "timeout":
        item = rng.choice(sorted(initial))
        calls = [("check", {"item": item})] * rng.randint(6, 10)
        msgs, _, _ = _play(initial, calls)
        return msgs, outcome(mode, tool_calls=len(calls), goal_reached=False, latency_ms=60000,
                              error=f"TimeoutError: episode exceeded the 60 s limit after {len(calls)} tool calls")
    if mode == "runtime_error":
        steps = gold[:-1]
        k = rng.randrange(len(steps)) if steps else 0
        msgs, _, _ = _play(initial, steps[:k])
        name, args = steps[k] if steps else ("add", {"item": "apple", "qty": 1})
        if rng.random() < 0.7:  # truncated arguments JSON
            raw = json.dumps(args, separators=(",", ":"))[: -rng.randint(1, 4)]
            call = {"id": f"call_{k}", "type": "function", "function": {"name": name, "arguments": raw}}
        else:  # arguments missing altogether
            call = {"id": f"call_{k}", "type": "function", "function": {"name": name}}
        msgs.append({"role": "assistant", "content": None, "tool_calls": [call]})
        err = fill_run(_agent_dispatch_error(json.dumps(call, sort_keys=True)), rng)
        return msgs, outcome(mode, tool_calls=k + 1, goal_reached=False, error=err)
    if mode == "invalid_tool_call":
        steps = gold[:-1]
        k = rng.randrange(len(steps) + 1)
        item = steps[k][1]["item"] if k < len(steps) else rng.choice(sorted(goal))
        bad = rng.choice([
            (rng.choice(["set", "set_quantity", "update_inventory", "add_item"]), {"item": item, "qty": 2}),
            ("add", {"item": item, "quantity": 2}),
            ("remove", {"item": item, "qty": -rng.randint(1, 5)}),
            ("add", {"item": item, "qty": str(rng.randint(1, 5))}),
            ("remove", {"item": item, "qty": 100}),
        ])
        msgs, env, err = _play(initial, [*steps[:k], bad, *gold[k:]])
        if err is None:  # cannot happen: every `bad` call is illegal
            raise AssertionError(f"illegal call {bad} was accepted")
        return msgs, outcome(mode, tool_calls=k + 1, goal_reached=False, error=f"IllegalCall: {err}")
    calls = list(gold)
    if mode == "wrong_answer":
        idx = [i for i, (n, _) in enumerate(calls) if n != "finish"]
        i = rng.choice(idx)
        name, args = calls[i]
        if name == "add" or args["qty"] > 1:
            delta = rng.randint(1, 2) if name == "add" else -1
            calls[i] = (name, {"item": args["item"], "qty": args["qty"] + delta})
        else:
            del calls[i]
    msgs, env, _ = _play(initial, calls)
    reached = env.goal_reached(goal)
    if reached != (mode == "success"):
        raise AssertionError(f"simulated agent {mode} ended with goal_reached={reached}")
    msgs.append({"role": "assistant", "content": "Done: the inventory now matches the goal."})
    return msgs, outcome(mode, tool_calls=len(calls), goal_reached=reached)


PROFILE = ProductionProfile(
    system_prompt="You manage an inventory through tools. Call tools one at a time, then call finish.",
    share=0.25, universe=400, base_logit=1.6,
    failure_weights={"wrong_answer": 0.33, "invalid_tool_call": 0.3, "runtime_error": 0.1, "format_error": 0.12,
                     "timeout": 0.08, "refused": 0.07},
    difficulty=difficulty, respond=respond,
)
