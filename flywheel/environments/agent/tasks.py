"""Multi-step tool-use tasks over the inventory environment, with gold trajectories.

A level is how many items the goal changes, how many it keeps, and how large the goal counts are
(`LEVELS`). Levels 1-3 are the SFT distribution, one change first (1, 2, 3 changes, at most one item kept,
goal counts up to 12). Levels 4-6 are production only (`PRODUCTION_LEVELS` says from which world day): a goal
count of 13-20 (one or two changes), one or two changes in a longer inventory (three or four items kept),
four changes. Level 7 is the frozen test suite's: a count of 13-20 with two or three items kept. Each
level's prompts are its own by construction: a prompt shows how many items differ, how many stay, and
whether a goal count exceeds 12.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

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


SMALL_MAX, BIG_MIN, BIG_MAX = 12, 13, 20
"""Goal counts: up to 12 in the SFT levels; a big level has a goal count of 13-20 (initial counts are 0-9)."""


@dataclass(frozen=True)
class Level:
    """What tasks of one level look like: how many items change, whether one goal count is big, and how many
    items the goal leaves as they are (`kept`, a range)."""

    changes: tuple[int, ...]
    big: bool = False
    kept: tuple[int, int] = (0, 1)


LEVELS = {1: Level((1,)), 2: Level((2,)), 3: Level((3,)),
          4: Level((1, 2), big=True), 5: Level((1, 2), kept=(3, 4)), 6: Level((4,)),
          7: Level((1, 2), big=True, kept=(2, 3))}
SFT_LEVELS = (1, 2, 3)
PRODUCTION_LEVELS = {4: 0, 5: 1, 6: 2}
"""Production-only levels -> the first world day users ask them: a goal count of 13-20 (one or two changes),
one or two changes among three or four items left as they are (longer inventories), four changes."""
TEST_LEVELS = (7,)
"""The frozen test suite: a goal count of 13-20 in a longer inventory (one or two changes, two or three items
kept): levels 4 and 5's shifts at once, never asked by production."""


def make_agent_task(rng: random.Random, n_changes: int = 2, big: bool = False, level: int | None = None,
                    kept: tuple[int, int] = (0, 1)) -> Task:
    """One task changing `n_changes` items and leaving `kept` (a range) as they are; `big`: the first changed
    item's goal is 13-20 (the rest 0-20). The SFT levels' random stream is the one tiny-v1 and tiny-v2 were
    built from."""
    items = rng.sample(ITEMS, k=min(len(ITEMS), n_changes + rng.randint(*kept)))
    initial = {i: rng.randint(0, 9) for i in items}
    goal = dict(initial)
    for j, item in enumerate(rng.sample(items, k=n_changes)):
        lo, hi = (BIG_MIN, BIG_MAX) if big and j == 0 else (0, BIG_MAX if big else SMALL_MAX)
        choices = [v for v in range(lo, hi + 1) if v != initial[item]]
        goal[item] = rng.choice(choices)
    prompt = f"Inventory: {_fmt(initial)}. Goal: {_fmt(goal)}. Use the tools, then call finish."
    calls = gold_trajectory(initial, goal)
    return Task(
        task_id=stable_task_id("agent", prompt),
        domain="agent",
        prompt=prompt,
        reference={"tools": TOOLS, "initial_state": initial, "goal": goal, "solution_calls": calls},
        solution=render_trajectory(initial, calls),
        meta={"changes": n_changes, **({"level": level} if level is not None else {})},
    )


def task_level(initial: dict[str, int], goal: dict[str, int]) -> int:
    """The level a task belongs to, read from its inventory and goal alone (what keeps levels disjoint)."""
    changed = [k for k, v in goal.items() if v != initial.get(k, 0)]
    big, kept = any(v > SMALL_MAX for v in goal.values()), len(goal) - len(changed)
    return next(lv for lv, spec in LEVELS.items()
                if len(changed) in spec.changes and spec.big == big and spec.kept[0] <= kept <= spec.kept[1])


def agent_suite(n: int, seed: int, levels: tuple[int, ...] = SFT_LEVELS,
                keep: Callable[[Task], bool] = lambda t: True) -> list[Task]:
    """`n` distinct tasks of `levels`, deterministic in `seed` (each draw picks a level, then a task)."""
    rng = random.Random(seed)
    out: dict[str, Task] = {}
    for _ in range(n * 50):
        if len(out) >= n:
            break
        level = rng.choice(levels)
        spec = LEVELS[level]
        changes = spec.changes[0] if len(spec.changes) == 1 else rng.choice(spec.changes)
        t = make_agent_task(rng, changes, spec.big, level, spec.kept)
        if keep(t):
            out.setdefault(t.task_id, t)
    return list(out.values())
