"""The responder seam's message codec: text <-> OpenAI-style messages round trip, malformed calls stay malformed."""

from __future__ import annotations

from flywheel.environments.toolcalls import parse_calls
from flywheel.tasks.suites import train_suite
from flywheel.world.responder import messages_from_text, text_from_messages


def test_text_and_messages_round_trip():
    t = train_suite("agent", 5)[0]
    msgs = messages_from_text("agent", t.solution)
    assert [m["role"] for m in msgs][:2] == ["assistant", "tool"] and msgs[0]["tool_calls"]
    assert text_from_messages([{"role": "user", "content": t.prompt}, *msgs]) == t.solution
    broken = '<tool_call>{"name": "add", "arguments": {"item": "x", "qty": 2</tool_call>'
    bm = messages_from_text("agent", broken)
    assert bm[0]["tool_calls"][0]["function"]["name"] == "add"
    calls = parse_calls(text_from_messages(bm))  # the malformed call stays malformed for a verifier
    assert len(calls) == 1 and calls[0].error is not None
    assert messages_from_text("math", "Answer: 3") == [{"role": "assistant", "content": "Answer: 3"}]


def test_a_call_without_a_readable_name_is_logged_as_text_that_ingest_accepts():
    """A weak champion writes calls with no name; they are traffic (failures to mine), never quarantined."""
    from flywheel.logs.messages import messages as validate

    for call in ('<tool_call>{"arguments": {"item": "x"}}</tool_call>', "<tool_call>add(x, 2)</tool_call>",
                 '<tool_call>{"name": "", "arguments": {}}</tool_call><tool_result>error: unknown tool</tool_result>'):
        text = "I will check. " + call + '<tool_call>{"name": "finish", "arguments": {"answer": "3"}}</tool_call>'
        msgs = messages_from_text("agent", text)
        validate([{"role": "user", "content": "q"}, *msgs])  # raises RecordError on an empty name
        assert msgs[0] == {"role": "assistant", "content": "I will check. " + call}
        assert msgs[1]["tool_calls"][0]["function"]["name"] == "finish"
        assert text_from_messages(msgs).startswith("I will check. " + call)  # verbatim
        first = parse_calls(text_from_messages(msgs))[0]
        assert first.error is not None or not first.name  # a verifier still sees a call it must fail
