"""Multi-step tool-use tasks over the inventory environment, with gold trajectories."""

from __future__ import annotations

import random
from collections.abc import Callable

from flywheel.environments.agent.inventory import TOOLS, InventoryEnv
from flywheel.environments.task import Task, stable_task_id
from flywheel.environments.toolcalls import format_call, format_result

ITEMS = ["apple", "pear", "plum", "fig", "lime", "kiwi", "nut", "egg"]


def _fmt(state: dict[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in state.items())


def gold_trajectory(initial: dict[str, int], goal: dict[str, int]) -> list[tuple[str, dict]]:
    """The shortest call sequence: one add/remove per item that differs, then finish."""
    calls: list[tuple[str, dict]] = []
    for item, target in goal.items():
        diff = target - initial.get(item, 0)
        if diff > 0:
            calls.append(("add", {"item": item, "qty": diff}))
        elif diff < 0:
            calls.append(("remove", {"item": item, "qty": -diff}))
    calls.append(("finish", {}))
    return calls


def render_trajectory(initial: dict[str, int], calls: list[tuple[str, dict]]) -> str:
    """Calls interleaved with the environment's results: the text a multi-step rollout produces."""
    env = InventoryEnv.from_initial(initial)
    parts = []
    for name, args in calls:
        parts.append(format_call(name, args) + format_result(env.call(name, args)))
    return "".join(parts)


def make_agent_task(rng: random.Random, n_changes: int = 2) -> Task:
    items = rng.sample(ITEMS, k=min(len(ITEMS), n_changes + rng.randint(0, 1)))
    initial = {i: rng.randint(0, 9) for i in items}
    goal = dict(initial)
    for item in rng.sample(items, k=n_changes):
        choices = [v for v in range(0, 13) if v != initial[item]]
        goal[item] = rng.choice(choices)
    prompt = f"Inventory: {_fmt(initial)}. Goal: {_fmt(goal)}. Use the tools, then call finish."
    calls = gold_trajectory(initial, goal)
    return Task(
        task_id=stable_task_id("agent", prompt),
        domain="agent",
        prompt=prompt,
        reference={"tools": TOOLS, "initial_state": initial, "goal": goal, "solution_calls": calls},
        solution=render_trajectory(initial, calls),
        meta={"changes": n_changes},
    )


def agent_suite(n: int, seed: int, changes: tuple[int, ...] = (1, 2, 3), keep: Callable[[Task], bool] = lambda t: True) -> list[Task]:
    rng = random.Random(seed)
    out: dict[str, Task] = {}
    for _ in range(n * 50):
        if len(out) >= n:
            break
        t = make_agent_task(rng, rng.choice(changes))
        if keep(t):
            out.setdefault(t.task_id, t)
    return list(out.values())
