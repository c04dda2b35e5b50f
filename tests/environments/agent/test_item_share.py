"""A failed agent replay says how much of the task it got right (`item_share`, in [0, 1)); a pass is 1."""

from __future__ import annotations

from flywheel.environments.agent import AgentEnvironment
from flywheel.environments.agent.inventory import TOOLS
from flywheel.environments.toolcalls import format_call

TASK = {"prompt": "p", "tools": TOOLS,
        "initial_state": {"apple": 3, "pear": 5, "fig": 1}, "goal": {"apple": 7, "pear": 2, "fig": 1}}


def _verdict(*calls):
    return AgentEnvironment().verify(TASK, "".join(format_call(n, a) for n, a in calls))


def test_item_share_counts_items_right_and_finishing():
    add, rem, fin = ("add", {"item": "apple", "qty": 4}), ("remove", {"item": "pear", "qty": 3}), ("finish", {})
    assert _verdict(add, rem, fin).passed and _verdict(add, rem, fin).details["item_share"] == 1.0
    assert _verdict(add, rem).details["item_share"] == 2 / 3  # both items, never finished
    assert _verdict(add, fin).details["item_share"] == 2 / 3  # one item of two, finished
    assert _verdict(fin).details["item_share"] == 1 / 3
    assert _verdict(add, ("add", {"item": "fig", "qty": 1}), rem, fin).details["item_share"] == 3 / 4  # a side effect
    assert _verdict(add, ("remove", {"item": "pear", "qty": 9})).details["item_share"] == 1 / 3  # illegal: stops there


def test_item_share_is_bounded_and_below_one_for_every_failure():
    env = AgentEnvironment()
    import random

    rng = random.Random(0)
    for t in env.suite(30, 1, 3, lambda t: True):
        items = list(t.reference["goal"])
        for _ in range(10):
            calls = [(rng.choice(["add", "remove"]), {"item": rng.choice(items), "qty": rng.randint(1, 6)})
                     for _ in range(rng.randint(0, 4))] + [("finish", {})] * rng.randint(0, 1)
            v = env.verify(t, "".join(format_call(n, a) for n, a in calls))
            share = v.details.get("item_share", 0.0)
            assert 0.0 <= share <= 1.0 and v.reward in (0.0, 1.0)  # the verdict itself stays binary
            assert share == 1.0 if v.passed else share < 1.0
