"""OTLP JSON GenAI spans -> one task-log record: the conversation with its tool call in order, usage summed,
latency from the spans, the evaluation event as feedback; broken spans quarantined naming the field."""

from __future__ import annotations

import copy
import json

import pytest

from flywheel.logs.formats import canonical, detect
from flywheel.logs.messages import RecordError
from flywheel.logs.traces.otel import any_value


def test_agent_trace_becomes_one_record(otel_export) -> None:
    assert detect(otel_export) == "otel"
    rec = canonical(otel_export)
    roles = [m["role"] for m in rec["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "assistant"]
    call = rec["messages"][2]["tool_calls"][0]
    assert call["function"] == {"name": "get_weather", "arguments": '{"city": "Paris"}'} and call["id"] == "call_1"
    assert rec["messages"][3] == {"role": "tool", "tool_call_id": "call_1", "content": "18C, sunny"}
    assert rec["model"] == "gpt-4o-2024" and rec["domain"] == "agent" and rec["task_id"] == "conv-42"
    assert rec["timestamp"] == "2025-12-05T16:00:00Z" and rec["otel_trace_id"].startswith("5b8e")
    assert rec["outcome"] == {"latency_ms": 900.0, "prompt_tokens": 60, "completion_tokens": 16,
                              "finish_reason": "stop", "scores": {"user_feedback": 1.0}, "user_feedback": "thumbs_up",
                              "passed": True}


def test_calls_without_history_and_a_tool_span_missing_from_messages(otel_export) -> None:
    spans = otel_export["resourceSpans"][0]["scopeSpans"][0]["spans"]
    for a in spans[3]["attributes"]:  # the second call logs only its new input: nothing
        if a["key"] == "gen_ai.input.messages":
            a["value"] = {"stringValue": "[]"}
    rec = canonical(otel_export)
    assert [m["role"] for m in rec["messages"]] == ["system", "user", "assistant", "tool", "assistant"]


def test_structured_attributes_and_missing_optional_fields(otel_export) -> None:
    assert any_value({"kvlistValue": {"values": [{"key": "a", "value": {"intValue": "7"}}]}}, "x") == {"a": 7}
    assert any_value({"arrayValue": {"values": [{"doubleValue": 0.5}, {"boolValue": True}]}}, "x") == [0.5, True]
    spans = otel_export["resourceSpans"][0]["scopeSpans"][0]["spans"]
    for s in spans:
        s.pop("endTimeUnixNano")
        s["attributes"] = [a for a in s["attributes"] if not a["key"].startswith(("gen_ai.usage", "gen_ai.conv"))]
    rec = canonical(otel_export)
    assert "latency_ms" not in rec["outcome"] and "prompt_tokens" not in rec["outcome"]
    assert rec["task_id"] == "5b8efff798038103d269b633813fc60c"


@pytest.mark.parametrize("break_it, field, why", [
    (lambda s: s[1].pop("traceId"), "resourceSpans[0].scopeSpans[0].spans[1].traceId", "trace id"),
    (lambda s: s[1]["attributes"].__setitem__(5, {"key": "gen_ai.input.messages", "value": {"stringValue": "[{"}}),
     "resourceSpans[0].scopeSpans[0].spans[1].attributes.gen_ai.input.messages", "does not parse"),
    (lambda s: s[2].__setitem__("startTimeUnixNano", "yesterday"), "resourceSpans[0].scopeSpans[0].spans[2]"
     ".startTimeUnixNano", "ISO-8601"),
    (lambda s: s[3].__setitem__("traceId", "another"), "resourceSpans", "2 traces in one record"),
    (lambda s: [x["attributes"].clear() for x in s], "resourceSpans", "no GenAI model-call span"),
    (lambda s: s[1]["attributes"].append({"value": {}}), "resourceSpans[0].scopeSpans[0].spans[1].attributes[9]",
     "string 'key'"),
])
def test_broken_spans_name_the_field(otel_export, break_it, field, why) -> None:
    bad = copy.deepcopy(otel_export)
    break_it(bad["resourceSpans"][0]["scopeSpans"][0]["spans"])
    with pytest.raises(RecordError) as e:
        canonical(bad)
    assert e.value.field == field and why in e.value.why, (e.value.field, e.value.why)


def test_an_error_span_is_the_outcome(otel_export) -> None:
    otel_export["resourceSpans"][0]["scopeSpans"][0]["spans"][2]["status"] = {"code": 2, "message": "tool timed out"}
    out = canonical(otel_export)["outcome"]
    assert out["status"] == "error" and out["error"] == "tool timed out"
    assert json.dumps(out)  # plain JSON


def _ids(export: dict, fn) -> dict:
    out = copy.deepcopy(export)
    for rs in out["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for s in ss["spans"]:
                for k in ("traceId", "spanId", "parentSpanId"):
                    if s.get(k):
                        s[k] = fn(s[k])
    return out


def test_the_fixture_is_what_opentelemetry_proto_writes(otel_export) -> None:
    """Round-trip through the real OTLP message (opentelemetry-proto): the proto3 JSON it writes (enum names,
    int64 as text, ids as hex per OTLP/JSON) converts to the same record, error status included."""
    pytest.importorskip("opentelemetry.proto")
    import base64

    from google.protobuf.json_format import MessageToDict, ParseDict
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    otel_export["resourceSpans"][0]["scopeSpans"][0]["spans"][2]["status"] = {"code": 2, "message": "slow tool"}
    msg = ParseDict(_ids(otel_export, lambda h: base64.b64encode(bytes.fromhex(h)).decode()),
                    ExportTraceServiceRequest())
    written = _ids(MessageToDict(msg), lambda b: base64.b64decode(b).hex())
    spans = written["resourceSpans"][0]["scopeSpans"][0]["spans"]
    assert spans[2]["status"]["code"] == "STATUS_CODE_ERROR" and spans[1]["kind"] == "SPAN_KIND_CLIENT"
    assert canonical(written) == canonical(otel_export)
    assert canonical(written)["outcome"]["error"] == "slow tool"
