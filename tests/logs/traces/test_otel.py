"""OTLP JSON GenAI spans -> one task-log record: the conversation with its tool call in order, usage summed,
latency from the spans, the evaluation event as feedback; broken spans quarantined naming the field."""

from __future__ import annotations

import copy
import json

import pytest

from flywheel.logs.formats import Expanded, canonical, canonical_line, detect
from flywheel.logs.messages import RecordError
from flywheel.logs.traces.otel import any_value, split


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
    (lambda s: s[3]["attributes"].__setitem__(4, {"key": "gen_ai.conversation.id", "value": {"stringValue": "c9"}}),
     "resourceSpans", "2 conversations in one record"),
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


def test_a_batch_of_traces_is_split_one_record_each(otel_export, retrace, batch_export) -> None:
    """The batch exporter sends many traces in one request: each trace (or conversation) is its own record."""
    a, b = retrace(otel_export, "aaaa", "conv-1"), retrace(otel_export, "bbbb", "conv-2")
    later = retrace(otel_export, "cccc", "conv-1")  # a second trace of conversation 1: joins its record
    parts = split(batch_export(a, b, later))
    assert [label for label, _ in parts] == ["conversation conv-1", "conversation conv-2"]
    recs = [canonical(p) for _, p in parts]
    assert [r["id"] for r in recs] == ["otel-conv-1", "otel-conv-2"]
    assert recs[0]["otel_trace_ids"] == ["aaaa", "cccc"] and recs[1]["otel_trace_id"] == "bbbb"
    assert recs[0]["outcome"]["prompt_tokens"] == 120  # both traces' calls counted once each
    out = canonical_line(json.dumps(batch_export(a, b, retrace(otel_export, "dddd", "conv-3", drop_calls=True))), "auto")
    assert isinstance(out, Expanded) and [type(x).__name__ for x in out] == ["str", "str", "RecordError"]
    assert out[2].why.startswith("trace dddd: no GenAI model-call span")  # its chat spans (with the conversation) are gone
    assert split(otel_export) == [("", otel_export)]  # one trace: the record as it is
    assert isinstance(canonical_line(json.dumps(otel_export), "otel"), str)


def test_spans_of_one_trace_under_two_resources_stay_one_record(otel_export, retrace, batch_export) -> None:
    other = retrace(otel_export, "aaaa", "conv-1")
    x, y = copy.deepcopy(other), copy.deepcopy(other)  # the same trace, its spans split over two services
    x["resourceSpans"][0]["scopeSpans"][0]["spans"] = x["resourceSpans"][0]["scopeSpans"][0]["spans"][:2]
    y["resourceSpans"][0]["scopeSpans"][0]["spans"] = y["resourceSpans"][0]["scopeSpans"][0]["spans"][2:]
    y["resourceSpans"][0]["resource"] = {"attributes": [{"key": "service.name", "value": {"stringValue": "tools"}}]}
    parts = split(batch_export(x, otel_export, y))
    assert len(parts) == 2 and len(parts[0][1]["resourceSpans"]) == 2  # both resources kept, in order
    assert canonical(parts[0][1])["messages"] == canonical(other)["messages"]


def test_a_span_that_cannot_be_placed_refuses_the_whole_export(otel_export, retrace, batch_export) -> None:
    bad = batch_export(otel_export, retrace(otel_export, "aaaa", "conv-1"))
    del bad["resourceSpans"][1]["scopeSpans"][0]["spans"][0]["traceId"]
    out = canonical_line(json.dumps(bad), "auto")
    assert isinstance(out, RecordError) and out.field == "resourceSpans[1].scopeSpans[0].spans[0].traceId"
