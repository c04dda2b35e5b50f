"""The worked plan before each agent call: it parses back, every step is true, and its gold passes the verifier."""

from __future__ import annotations

import re

import pytest

from flywheel.environments.agent import AgentEnvironment
from flywheel.environments.agent.plan import parse_plan, render_plan_trajectory, worked_difference
from flywheel.environments.agent.tasks import LEVELS
from flywheel.environments.toolcalls import parse_calls


@pytest.mark.parametrize("level", sorted(LEVELS))
def test_plan_gold_parses_and_passes_the_verifier(level):
    env = AgentEnvironment()
    for t in env.suite(40, 3, level, lambda t: True):
        initial, goal = t.reference["initial_state"], t.reference["goal"]
        text = render_plan_trajectory(initial, goal)
        v = env.verify(t, text)
        assert v.passed, (v.reason, text)
        steps = parse_plan(text)
        assert [(s.item, s.have, s.want) for s in steps] == [(k, initial[k], w) for k, w in goal.items()]
        calls = [c for c in parse_calls(text) if c.name != "finish"]
        acting = [s for s in steps if s.action]
        assert [(c.name, c.arguments) for c in calls] == [(s.action, {"item": s.item, "qty": s.qty}) for s in acting]
        for s in steps:
            assert (s.action is None) == (s.have == s.want)
            if s.action:
                assert s.action == ("add" if s.want > s.have else "remove") and s.qty == abs(s.want - s.have)
                assert s.work.endswith(str(s.qty))
                for expr, val in re.findall(r"(\d+-\d+)=(\d+)", s.work):  # every digit step is true
                    assert eval(expr) == int(val)


def test_worked_difference_is_maths_scratchpad_format():
    assert worked_difference(7, 3) == "7-3=4"
    assert worked_difference(12, 4) == "12-4: 12-4=8, 0-0=0 so 8"
    assert worked_difference(17, 4) == "17-4: 7-4=3, 1-0=1 so 13"
    assert worked_difference(20, 9) == "20-9: 10-9=1, 1-0=1 so 11"


def test_plan_text_is_ignored_by_the_verifier_only_calls_count():
    env = AgentEnvironment()
    t = env.suite(1, 0, 2, lambda t: True)[0]
    wrong_plan = re.sub(r"have \d+", "have 99", render_plan_trajectory(t.reference["initial_state"], t.reference["goal"]))
    assert env.verify(t, wrong_plan).passed  # the calls decide, not what the plan claims
    assert not env.verify(t, "apple: have 1 want 2, 2-1=1, add 1. ").passed  # a plan without calls does nothing
