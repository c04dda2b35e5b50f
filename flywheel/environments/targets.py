"""Gold solutions written the way the tiny base models are taught to answer: math worked digit by digit, agent
calls with or without a worked plan before each. Build-time SFT data (`models.sft_data`) and RFT's reference
solutions (`train.rft`) both write their targets here, so a reference reads like what the base learned."""

from __future__ import annotations

import re

from flywheel.environments.agent.plan import render_plan_trajectory
from flywheel.environments.task import Task

_OP = re.compile(r"(\d+) ([+\-*]) (\d+) = (\d+)")


def _digits(n: int) -> list[int]:
    return [int(c) for c in reversed(str(n))]


def _add(x: int, y: int) -> str:
    if x < 10 and y < 10:
        return f"{x}+{y}={x + y}"
    dx, dy, carry, parts = _digits(x), _digits(y), 0, []
    for i in range(max(len(dx), len(dy))):
        a, b = (dx[i] if i < len(dx) else 0), (dy[i] if i < len(dy) else 0)
        s = a + b + carry
        parts.append(f"{a}+{b}{'+1' if carry else ''}={s}")
        carry = s // 10
    return f"{x}+{y}: " + ", ".join(parts) + f" so {x + y}"


def _sub(x: int, y: int) -> str:
    if x < 10:
        return f"{x}-{y}={x - y}"
    dx, dy, borrow, parts = _digits(x), _digits(y), 0, []
    for i in range(len(dx)):
        top, b = dx[i] - borrow, (dy[i] if i < len(dy) else 0)
        borrow = 1 if top < b else 0
        top += 10 * borrow
        parts.append(f"{top}-{b}={top - b}")
    return f"{x}-{y}: " + ", ".join(parts) + f" so {x - y}"


def _mul(k: int, x: int) -> str:
    if x < 10:
        return f"{k}*{x}={k * x}"
    dx, carry, parts = _digits(x), 0, []
    for d in dx:
        s = k * d + carry
        parts.append(f"{k}*{d}{f'+{carry}' if carry else ''}={s}")
        carry = s // 10
    return f"{k}*{x}: " + ", ".join(parts) + f" so {k * x}"


def scratchpad(solution: str) -> str:
    """The gold math solution with each operation worked digit by digit (units first, with carries).

    A ~1M-parameter model cannot add two-digit numbers in one token step, but it can learn
    single-digit facts and copying; the verifier only reads `Answer: N`.
    """
    steps = []
    for a, op, b, _ in _OP.findall(solution):
        a, b = int(a), int(b)
        steps.append(_add(a, b) if op == "+" else _sub(a, b) if op == "-" else _mul(a, b))
    ans = solution.rsplit("Answer: ", 1)[1]
    return ". ".join(steps) + f". Answer: {ans}"


def sft_target(task: Task, formats: dict[str, str]) -> str:
    """`task`'s gold solution as a tiny recipe writes its SFT targets (`formats`: the recipe's `math_format` and
    `agent_format`; a format not given, or a domain without one: the environment's solution as it is)."""
    if task.domain == "math" and formats.get("math_format") == "scratchpad":
        return scratchpad(task.solution)
    if task.domain == "agent" and formats.get("agent_format"):
        return agent_target(task, formats["agent_format"])
    return task.solution


def agent_target(task: Task, agent_format: str) -> str:
    """An agent task's SFT target: its gold calls (`direct`), or with a worked plan before each (`plan`)."""
    if agent_format == "plan":
        return render_plan_trajectory(task.reference["initial_state"], task.reference["goal"])
    return task.solution


