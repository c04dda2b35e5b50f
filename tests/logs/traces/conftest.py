"""Traces as the tools export them, built here: an OTLP JSON export request (attributes as `AnyValue`s, int64 as
text, the GenAI messages as JSON text inside a string attribute, a tool span, an evaluation event), a Langfuse
trace with its observations and scores, and a LangSmith root run with LangChain-serialised messages in its
child runs."""

from __future__ import annotations

import copy
import json

import pytest

T0 = 1_764_950_400_000_000_000  # 2025-12-05T16:00:00Z in nanoseconds


def _attr(key, value):
    if isinstance(value, bool):
        v = {"boolValue": value}
    elif isinstance(value, int):
        v = {"intValue": str(value)}
    elif isinstance(value, float):
        v = {"doubleValue": value}
    elif isinstance(value, list):
        v = {"arrayValue": {"values": [{"stringValue": x} for x in value]}}
    else:
        v = {"stringValue": value}
    return {"key": key, "value": v}


def _span(span_id, name, start_ms, end_ms, attrs, parent=None, trace="5b8efff798038103d269b633813fc60c", **kw):
    sid = {"a1": "51a0e2c3d4b5a601", "c1": "51a0e2c3d4b5a602", "t1": "51a0e2c3d4b5a603", "c2": "51a0e2c3d4b5a604"}
    return {"traceId": trace, "spanId": sid[span_id], "parentSpanId": sid.get(parent, ""), "name": name, "kind": 3,
            "startTimeUnixNano": str(T0 + start_ms * 1_000_000), "endTimeUnixNano": str(T0 + end_ms * 1_000_000),
            "attributes": [_attr(k, v) for k, v in attrs.items()], "status": {}, **kw}


@pytest.fixture
def otel_export():
    """One agent turn: chat call asking for a tool, the tool run, a second chat call answering."""
    user = [{"role": "user", "parts": [{"type": "text", "content": "Weather in Paris? Mail me at ann@example.com"}]}]
    call = {"role": "assistant", "parts": [{"type": "tool_call", "id": "call_1", "name": "get_weather",
                                            "arguments": {"city": "Paris"}}], "finish_reason": "tool_call"}
    result = {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_1", "response": "18C, sunny"}]}
    answer = {"role": "assistant", "parts": [{"type": "text", "content": "It is 18C and sunny."}],
              "finish_reason": "stop"}
    common = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "gen_ai.response.model": "gpt-4o-2024",
              "gen_ai.conversation.id": "conv-42", "gen_ai.system_instructions":
              json.dumps([{"type": "text", "content": "You are a weather bot."}])}
    spans = [
        _span("a1", "invoke_agent weather", 0, 900, {"gen_ai.operation.name": "invoke_agent", "flywheel.domain": "agent"}),
        _span("c1", "chat gpt-4o", 10, 300, {**common, "gen_ai.input.messages": json.dumps(user),
                                             "gen_ai.output.messages": json.dumps([call]),
                                             "gen_ai.usage.input_tokens": 20, "gen_ai.usage.output_tokens": 7},
              parent="a1"),
        _span("t1", "execute_tool get_weather", 310, 400, {"gen_ai.operation.name": "execute_tool",
                                                            "gen_ai.tool.name": "get_weather",
                                                            "gen_ai.tool.call.id": "call_1",
                                                            "gen_ai.tool.call.arguments": '{"city": "Paris"}',
                                                            "gen_ai.tool.call.result": "18C, sunny"}, parent="a1"),
        _span("c2", "chat gpt-4o", 410, 880, {**common, "gen_ai.input.messages": json.dumps(user + [call, result]),
                                              "gen_ai.output.messages": json.dumps([answer]),
                                              "gen_ai.usage.input_tokens": 40, "gen_ai.usage.output_tokens": 9,
                                              "gen_ai.response.finish_reasons": ["stop"]},
              parent="a1", events=[{"name": "gen_ai.evaluation.result", "timeUnixNano": str(T0),
                                    "attributes": [_attr("gen_ai.evaluation.name", "user_feedback"),
                                                   _attr("gen_ai.evaluation.score.value", 1.0)]}]),
    ]
    return {"resourceSpans": [{"resource": {"attributes": [_attr("service.name", "weather-bot")]},
                               "scopeSpans": [{"scope": {"name": "openinference"}, "spans": spans}]}]}


@pytest.fixture
def langfuse_trace():
    return {
        "id": "lf-trace-1", "timestamp": "2025-12-05T16:00:00.000Z", "name": "qa", "sessionId": "s-9",
        "userId": "u-1", "metadata": {"task_id": "geo-7", "domain": "math"}, "tags": ["prod"],
        "latency": 1.25, "totalCost": 0.0021,
        "observations": [
            {"id": "o1", "traceId": "lf-trace-1", "type": "GENERATION", "name": "plan", "model": "gpt-4o-mini",
             "startTime": "2025-12-05T16:00:00.100Z", "endTime": "2025-12-05T16:00:00.600Z",
             "input": json.dumps([{"role": "system", "content": "Be brief."},
                                  {"role": "user", "content": "What is 6 * 7?"}]),
             "output": {"role": "assistant", "content": None, "tool_calls": [
                 {"id": "tc1", "type": "function", "function": {"name": "calc", "arguments": '{"expr": "6*7"}'}}]},
             "usageDetails": {"input": 12, "output": 5, "total": 17}, "costDetails": {"total": 0.001}},
            {"id": "tc1", "traceId": "lf-trace-1", "type": "TOOL", "name": "calc",
             "startTime": "2025-12-05T16:00:00.650Z", "endTime": "2025-12-05T16:00:00.700Z",
             "input": {"expr": "6*7"}, "output": "42"},
            {"id": "o2", "traceId": "lf-trace-1", "type": "GENERATION", "name": "answer", "model": "gpt-4o-mini",
             "startTime": "2025-12-05T16:00:00.800Z", "endTime": "2025-12-05T16:00:01.200Z",
             "input": {"messages": [{"role": "user", "content": "What is 6 * 7?"}]},
             "output": "Answer: 42", "usage": {"promptTokens": 30, "completionTokens": 3}},
            {"id": "e1", "traceId": "lf-trace-1", "type": "EVENT", "name": "cache-miss",
             "startTime": "2025-12-05T16:00:00.050Z"},
        ],
        "scores": [{"name": "user_feedback", "value": 0, "dataType": "NUMERIC", "comment": "wrong units"},
                   {"name": "correct", "value": True, "dataType": "BOOLEAN", "stringValue": "True"}],
    }


def _lc(kind, **kw):
    return {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", kind], "kwargs": kw}


@pytest.fixture
def langsmith_run():
    tool_call = {"name": "search", "args": {"q": "capital of France"}, "id": "call_s1", "type": "tool_call"}
    return {
        "id": "8f0b-root", "trace_id": "8f0b-root", "name": "AgentExecutor", "run_type": "chain",
        "start_time": "2025-12-05T16:00:00.000000", "end_time": "2025-12-05T16:00:02.500000",
        "inputs": {"input": "capital of France?"}, "outputs": {"output": "Paris"}, "error": None,
        "extra": {"metadata": {"task_id": "geo-1"}}, "parent_run_id": None, "tags": ["prod"],
        "feedback_stats": {"user_score": {"n": 1, "avg": 1.0}, "correctness": {"n": 2, "avg": 0.5}},
        "child_runs": [
            {"id": "r1", "name": "ChatOpenAI", "run_type": "llm", "parent_run_id": "8f0b-root",
             "start_time": "2025-12-05T16:00:00.100000", "end_time": "2025-12-05T16:00:00.900000",
             "inputs": {"messages": [[_lc("SystemMessage", content="Answer with one word."),
                                      _lc("HumanMessage", content="capital of France?")]]},
             "outputs": {"generations": [[{"text": "", "message": _lc("AIMessage", content="",
                                                                       tool_calls=[tool_call])}]]},
             "extra": {"invocation_params": {"model": "gpt-4o"}}, "prompt_tokens": 25, "completion_tokens": 8,
             "total_cost": 0.0004, "child_runs": []},
            {"id": "r2", "name": "search", "run_type": "tool", "parent_run_id": "8f0b-root",
             "start_time": "2025-12-05T16:00:01.000000", "end_time": "2025-12-05T16:00:01.400000",
             "inputs": {"input": '{"q": "capital of France"}'}, "outputs": {"output": "Paris is the capital."},
             "extra": {"tool_call_id": "call_s1"}},
            {"id": "r3", "name": "ChatOpenAI", "run_type": "llm", "parent_run_id": "8f0b-root",
             "start_time": "2025-12-05T16:00:01.500000", "end_time": "2025-12-05T16:00:02.400000",
             "inputs": {"messages": [[_lc("SystemMessage", content="Answer with one word."),
                                      _lc("HumanMessage", content="capital of France?"),
                                      _lc("AIMessage", content="", tool_calls=[tool_call]),
                                      _lc("ToolMessage", content="Paris is the capital.", tool_call_id="call_s1")]]},
             "outputs": {"generations": [[{"text": "Paris", "message": _lc("AIMessage", content="Paris")}]]},
             "extra": {"invocation_params": {"model": "gpt-4o"}}, "prompt_tokens": 40, "completion_tokens": 2,
             "total_cost": 0.0006},
        ],
    }


def _retrace(export, trace, conversation=None, drop_calls=False):
    """A copy of an OTLP export as another trace (and conversation); `drop_calls`: without its model-call spans."""
    out = copy.deepcopy(export)
    for rs in out["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            if drop_calls:
                ss["spans"] = [s for s in ss["spans"] if not s["name"].startswith("chat")]
            for s in ss["spans"]:
                s["traceId"] = trace
                for a in s["attributes"]:
                    if a["key"] == "gen_ai.conversation.id" and conversation:
                        a["value"] = {"stringValue": conversation}
    return out


def _batch_export(*exports):
    """Several exports as the batch exporter sends them: one request, their resource spans side by side."""
    return {"resourceSpans": [rs for e in exports for rs in e["resourceSpans"]]}


@pytest.fixture
def retrace():
    return _retrace


@pytest.fixture
def batch_export():
    return _batch_export
