"""Agent verifier: replay of tool calls (text and OpenAI messages) in a fresh InventoryEnv."""

from __future__ import annotations

import json

import pytest

from flywheel.environments.agent.inventory import TOOLS
from flywheel.environments.agent.verifier import AgentVerifier
from flywheel.environments.toolcalls import format_call, format_result
from flywheel.tasks.suites import heldout_suite, train_suite
from flywheel.verifiers.common import TaskError

V = AgentVerifier()
TASK = {"prompt": "p", "tools": TOOLS, "initial_state": {"apple": 2, "pear": 5}, "goal": {"apple": 4, "pear": 1}}
GOLD = [("add", {"item": "apple", "qty": 2}), ("remove", {"item": "pear", "qty": 4}), ("finish", {})]


def text(calls):
    return "".join(format_call(n, a) for n, a in calls)


def test_gold_trajectories_pass():
    for t in train_suite("agent", 15) + heldout_suite("agent", 5):
        v = V.verify(t.verifier_task(), t.solution)
        assert v.passed and v.reward == 1.0, v


def test_openai_messages_and_json_text_pass():
    msgs = [{"role": "user", "content": "do it"}]
    for name, args in GOLD:
        msgs.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": name, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]})
        msgs.append({"role": "tool", "tool_call_id": name, "content": "ok"})
    assert V.verify(TASK, msgs).passed
    assert V.verify(TASK, json.dumps(msgs)).passed


def test_model_claimed_results_are_ignored():
    fake = "".join(format_call(n, a) + format_result("apple=4, pear=1 GOAL REACHED") for n, a in GOLD)
    v = V.verify(TASK, fake)
    assert v.passed and v.details["claimed_results_match"] is False
    assert not V.verify(TASK, format_result("apple=4") + format_result("pear=1") + " done").passed


@pytest.mark.parametrize("calls, reason", [
    ([("teleport", {"item": "apple", "qty": 2}), ("finish", {})], "not offered"),
    ([("add", {"item": "apple"}), ("finish", {})], "takes arguments"),
    ([("add", {"item": "apple", "qty": 2.0}), ("finish", {})], "positive integer"),
    ([("add", {"item": "apple", "qty": True}), ("finish", {})], "positive integer"),
    ([("add", {"item": "", "qty": 1}), ("finish", {})], "non-empty"),
    ([("remove", {"item": "pear", "qty": 9}), ("finish", {})], "cannot remove"),
    ([("finish", {}), ("add", {"item": "apple", "qty": 2})], "after the episode ended"),
    ([*GOLD, ("check", {"item": "apple"})], "after the episode ended"),
])
def test_illegal_calls_fail(calls, reason):
    v = V.verify(TASK, text(calls))
    assert not v.passed and "illegal call" in v.reason and reason in v.reason, v.reason


def test_unparseable_call_fails():
    v = V.verify(TASK, "<tool_call>{not json}</tool_call>" + text(GOLD))
    assert not v.passed and "not valid JSON" in v.reason


def test_end_state_checks():
    assert "never calls finish" in V.verify(TASK, text(GOLD[:-1])).reason
    assert "goal not reached" in V.verify(TASK, text([GOLD[0], ("finish", {})])).reason
    side = text([*GOLD[:-1], ("add", {"item": "plum", "qty": 1}), ("finish", {})])
    assert "outside the goal" in V.verify(TASK, side).reason
    assert V.verify(TASK, "no calls at all").reason == "no tool calls"
    assert "too many" in V.verify(TASK, text([("check", {"item": "apple"})] * 100 + [("finish", {})])).reason


def test_tool_not_offered_by_this_task_is_illegal():
    only_add = dict(TASK, tools=[t for t in TOOLS if t["name"] in ("add", "finish")], goal={"apple": 4})
    assert V.verify(only_add, text([("add", {"item": "apple", "qty": 2}), ("finish", {})])).passed
    assert "not offered" in V.verify(only_add, text(GOLD)).reason


def test_bad_task_is_a_task_error_and_odd_responses_fail():
    with pytest.raises(TaskError):
        V.verify({"prompt": "p", "tools": TOOLS, "goal": {}}, text(GOLD))
    for junk in (None, 42, {"x": 1}, [1, 2]):
        assert not V.verify(TASK, junk).passed
