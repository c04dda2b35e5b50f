"""Agent verifier, red-team round: honest trajectories in every OpenAI shape pass, forged ones fail.

False negatives the issue found (a finish call with empty-string arguments, legacy `function_call`
messages, content given as a list of parts) each come in several variants; every shape also has a
negative twin (same shape, wrong trajectory) so a verifier that passes everything fails here.
"""

from __future__ import annotations

import json

import pytest

from flywheel.environments.agent.inventory import TOOLS
from flywheel.environments.agent.verifier import AgentVerifier
from flywheel.environments.toolcalls import format_call, format_result

V = AgentVerifier()
TASK = {"prompt": "p", "tools": TOOLS, "initial_state": {"apple": 2, "pear": 5}, "goal": {"apple": 4, "pear": 1}}
GOLD = [("add", {"item": "apple", "qty": 2}), ("remove", {"item": "pear", "qty": 4}), ("finish", {})]
WRONG = [("add", {"item": "apple", "qty": 3}), ("remove", {"item": "pear", "qty": 4}), ("finish", {})]


def tool_calls_msgs(calls, finish_args="{}"):
    """Modern OpenAI messages: one assistant message per call, `arguments` as a JSON string."""
    msgs = [{"role": "system", "content": "tools"}, {"role": "user", "content": "do it"}]
    for i, (name, args) in enumerate(calls):
        a = finish_args if name == "finish" else json.dumps(args)
        msgs.append({"role": "assistant", "content": None,
                     "tool_calls": [{"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": a}}]})
        msgs.append({"role": "tool", "tool_call_id": f"c{i}", "content": "ok"})
    return msgs


def legacy_msgs(calls, finish_args="{}"):
    """The pre-tools format: `function_call` on the assistant message, results as role `function`."""
    msgs = [{"role": "user", "content": "do it"}]
    for name, args in calls:
        a = finish_args if name == "finish" else json.dumps(args)
        msgs.append({"role": "assistant", "content": None, "function_call": {"name": name, "arguments": a}})
        msgs.append({"role": "function", "name": name, "content": "ok"})
    return msgs


def parts_msgs(calls):
    """Inline `<tool_call>` blocks in content given as a list of text parts."""
    msgs = [{"role": "user", "content": [{"type": "text", "text": "do it"}]}]
    for name, args in calls:
        msgs.append({"role": "assistant", "content": [{"type": "text", "text": "Calling. "},
                                                      {"type": "text", "text": format_call(name, args)}]})
        msgs.append({"role": "tool", "content": [{"type": "text", "text": "ok"}]})
    return msgs


EMPTY_FINISH_ARGS = ["", "  ", "{}", "null", None, "\n"]


@pytest.mark.parametrize("finish_args", EMPTY_FINISH_ARGS)
def test_finish_with_empty_arguments_passes(finish_args):
    assert V.verify(TASK, tool_calls_msgs(GOLD, finish_args)).passed
    assert V.verify(TASK, legacy_msgs(GOLD, finish_args)).passed
    assert not V.verify(TASK, tool_calls_msgs(WRONG, finish_args)).passed


def test_finish_without_an_arguments_key_passes():
    msgs = tool_calls_msgs(GOLD)
    del msgs[-2]["tool_calls"][0]["function"]["arguments"]
    assert V.verify(TASK, msgs).passed


@pytest.mark.parametrize("args, reason", [
    ("", "takes arguments"),          # empty arguments to a tool that needs them: still illegal
    ("[]", "must be an object"),
    ("{not json", "not valid JSON"),
    ('"{}"', "must be an object"),
    ("42", "must be an object"),
])
def test_empty_or_bad_arguments_to_a_tool_with_parameters_fail(args, reason):
    msgs = tool_calls_msgs(GOLD)
    msgs[2]["tool_calls"][0]["function"]["arguments"] = args
    v = V.verify(TASK, msgs)
    assert not v.passed and "illegal call" in v.reason and reason in v.reason, v.reason


@pytest.mark.parametrize("shape", ["list", "json_text", "mixed_with_tool_calls"])
def test_legacy_function_call_messages_pass(shape):
    msgs = legacy_msgs(GOLD)
    if shape == "mixed_with_tool_calls":  # a conversation that switched formats half-way
        msgs = legacy_msgs(GOLD[:1]) + tool_calls_msgs(GOLD[1:])[2:]
    resp = json.dumps(msgs) if shape == "json_text" else msgs
    assert V.verify(TASK, resp).passed
    bad = legacy_msgs(WRONG)
    assert not V.verify(TASK, json.dumps(bad) if shape == "json_text" else bad).passed


def test_legacy_function_call_is_still_checked():
    msgs = legacy_msgs([("teleport", {"item": "apple", "qty": 2}), ("finish", {})])
    assert "not offered" in V.verify(TASK, msgs).reason
    msgs = legacy_msgs(GOLD)
    msgs[1]["function_call"] = {"arguments": "{}"}  # no name
    assert "name" in V.verify(TASK, msgs).reason


@pytest.mark.parametrize("shape", ["messages", "json_text", "bare_parts", "one_message", "output_text_parts"])
def test_content_as_a_list_of_parts_passes(shape):
    def build(calls):
        if shape == "messages":
            return parts_msgs(calls)
        if shape == "json_text":
            return json.dumps(parts_msgs(calls))
        parts = [{"type": "text", "text": format_call(n, a)} for n, a in calls]
        if shape == "bare_parts":
            return parts
        if shape == "output_text_parts":
            return [{"role": "assistant", "content": [dict(p, type="output_text") for p in parts]}]
        return {"role": "assistant", "content": parts}
    assert V.verify(TASK, build(GOLD)).passed, shape
    assert not V.verify(TASK, build(WRONG)).passed, shape


def test_json_messages_with_a_long_first_message_are_read_as_messages():
    msgs = tool_calls_msgs(GOLD)
    msgs[0]["content"] = "x" * 500  # "role" of later messages lies beyond the first 200 characters
    assert V.verify(TASK, json.dumps(msgs)).passed
    assert V.verify(TASK, json.dumps(msgs, indent=2)).passed


def test_results_claimed_in_tool_messages_or_parts_are_ignored():
    msgs = parts_msgs(WRONG)
    for m in msgs:
        if m["role"] == "tool":
            m["content"] = [{"type": "text", "text": format_result("apple=4, pear=1 GOAL REACHED")}]
    assert not V.verify(TASK, msgs).passed
    user_calls = [{"role": "user", "content": "".join(format_call(n, a) for n, a in GOLD)}]
    assert V.verify(TASK, user_calls).reason == "no tool calls"  # calls by the user are not the model's
    image_only = [{"role": "assistant", "content": [{"type": "image_url", "image_url": {"url": format_call(*GOLD[0])}}]}]
    assert not V.verify(TASK, image_only).passed


@pytest.mark.parametrize("junk", [
    [{"role": "assistant", "tool_calls": "add"}],
    [{"role": "assistant", "tool_calls": [None, 3]}],
    [{"role": "assistant", "function_call": {"name": 7, "arguments": "{}"}}],
    [{"role": "assistant", "tool_calls": [{"function": "finish"}]}],
    {"role": "assistant", "content": {"type": "text"}},
    "[" * 100_000,
    json.dumps([{"role": "assistant", "content": [{"type": "text", "text": 3}]}]),
])
def test_malformed_shapes_fail_without_crashing(junk):
    v = V.verify(TASK, junk)
    assert not v.passed and v.reward == 0.0
