"""Pass/fail of a response for build-time measurement of the tiny model.

Uses the project's verifiers (`flywheel.verifiers`) when they are installed; until then a
local check with the same meaning: math `Answer: N` equals the reference, code runs the
task's tests in a subprocess with a timeout, agent replays the calls and needs the goal
state and a `finish`.
"""

from __future__ import annotations

import functools
import re
import subprocess
import sys
from typing import Any

_ANSWER = re.compile(r"Answer:\s*(-?\d+)")
_CODE = re.compile(r"```(?:python)?\n(.*?)```", re.S)


def score(task: Any, response: str) -> bool:
    """True if `response` solves `task`."""
    fn = getattr(task, "domain", "")
    if fn == "math":
        m = _ANSWER.search(response)
        return bool(m) and m.group(1) == str(task.reference["answer"]).strip()
    if fn == "code":
        return _code_passes(task, response)
    if fn == "agent":
        return _agent_passes(task, response)
    raise ValueError(f"unknown domain {fn!r}")


def _code_passes(task: Any, response: str) -> bool:
    m = _CODE.search(response)
    if not m:
        return False
    return _run_check(m.group(1), task.reference["test"], task.reference["entry_point"])


@functools.lru_cache(maxsize=4096)
def _run_check(code: str, test: str, entry_point: str, timeout: float = 5.0) -> bool:
    """Run code + its tests in a fresh isolated interpreter (cached: samples repeat a lot)."""
    prog = code + "\n" + test + f"\ncheck({entry_point})\n"
    try:
        r = subprocess.run([sys.executable, "-I", "-"], input=prog.encode(errors="replace"), capture_output=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return False
    return r.returncode == 0


def _agent_passes(task: Any, response: str) -> bool:
    from flywheel.tasks.agent_env import IllegalCall, InventoryEnv
    from flywheel.tasks.toolcalls import parse_calls

    env = InventoryEnv.from_initial(task.reference["initial_state"])
    for call in parse_calls(response):
        if call.error:
            continue
        try:
            env.call(call.name, call.arguments)
        except IllegalCall:
            continue
        if env.done:
            break
    return env.done and env.goal_reached(task.reference["goal"])
