"""A Langfuse trace with its observations -> one record: generations and the tool in time order, usage (both
shapes) summed, the trace's cost and latency, scores (numeric and boolean) and the user's thumbs in `outcome`."""

from __future__ import annotations

import copy

import pytest

from flywheel.logs.formats import canonical, detect
from flywheel.logs.messages import RecordError


def test_trace_becomes_one_record(langfuse_trace) -> None:
    assert detect(langfuse_trace) == "langfuse"
    rec = canonical(langfuse_trace)
    assert [m["role"] for m in rec["messages"]] == ["system", "user", "assistant", "tool", "assistant"]
    assert rec["messages"][2]["tool_calls"][0]["function"]["name"] == "calc"
    assert rec["messages"][3] == {"role": "tool", "tool_call_id": "tc1", "content": "42"}
    assert rec["messages"][-1]["content"] == "Answer: 42"
    assert (rec["task_id"], rec["domain"], rec["model"]) == ("geo-7", "math", "gpt-4o-mini")
    assert rec["outcome"] == {"latency_ms": 1250.0, "prompt_tokens": 42, "completion_tokens": 8, "cost_usd": 0.0021,
                              "scores": {"user_feedback": 0.0, "correct": 1.0}, "user_feedback": "thumbs_down",
                              "passed": False}
    assert rec["sessionId"] == "s-9" and rec["trace_format"] == "langfuse"


def test_missing_optional_fields(langfuse_trace) -> None:
    for k in ("latency", "totalCost", "scores", "metadata"):
        langfuse_trace.pop(k)
    rec = canonical(langfuse_trace)
    assert rec["outcome"]["latency_ms"] == 1200.0 and rec["outcome"]["cost_usd"] == 0.001
    assert rec["task_id"] == "lf-trace-1" and rec["domain"] == "chat" and "scores" not in rec["outcome"]


@pytest.mark.parametrize("break_it, field", [
    (lambda t: t.pop("id"), "id"),
    (lambda t: t.__setitem__("observations", "o1,o2"), "observations"),
    (lambda t: t["observations"][0].__setitem__("input", '[{"role": "user", '), "observations[0].input"),
    (lambda t: t["observations"][2].pop("startTime"), "observations[2].startTime"),
    (lambda t: t["observations"][0].__setitem__("input", [{"role": "narrator", "content": "x"}]),
     "observations[0].input[0].role"),
    (lambda t: t.__setitem__("observations", [t["observations"][1]]), "observations"),
    (lambda t: t["scores"].append({"value": 1}), "scores[2]"),
])
def test_broken_traces_name_the_field(langfuse_trace, break_it, field) -> None:
    bad = copy.deepcopy(langfuse_trace)
    break_it(bad)
    with pytest.raises(RecordError) as e:
        canonical(bad)
    assert e.value.field == field, (e.value.field, e.value.why)
