"""OpenTelemetry GenAI spans, as OTLP JSON exports them (`{"resourceSpans": [{"resource", "scopeSpans": [{"scope",
"spans": [...]}]}]}`, one export request per record), -> one task-log record.

Read per span: `traceId`, `spanId`, `startTimeUnixNano`/`endTimeUnixNano` (int64 as text), `status`, `events`, and
the attributes (OTLP `AnyValue`s: string/int/double/bool/array/kvlist) of the GenAI semantic conventions:
`gen_ai.operation.name` (`chat`, `text_completion`, `generate_content`: a model call; `execute_tool`: a tool
execution), `gen_ai.request.model` / `gen_ai.response.model`, `gen_ai.usage.input_tokens` / `output_tokens`,
`gen_ai.input.messages` / `gen_ai.output.messages` (messages with `parts`: `text`, `tool_call`,
`tool_call_response`; structured or as JSON text), `gen_ai.system_instructions`, `gen_ai.tool.name` /
`gen_ai.tool.call.id` / `.arguments` / `.result`, `gen_ai.conversation.id`, `gen_ai.response.finish_reasons`;
`gen_ai.evaluation.result` events become scores. Spans without `gen_ai.operation.name` (the app's own) only
count towards latency.

One export request often holds many traces (a batch exporter sends what it has): `split` cuts it into one export
per trace -- or per conversation, where `gen_ai.conversation.id` ties several traces together -- each keeping its
resource and scope, and each becomes its own record. A span that cannot be placed (not an object, no `traceId`)
makes the whole export unreadable, naming the field; a trace that spans two conversations is quarantined.
"""

from __future__ import annotations

from typing import Any

from flywheel.logs import messages as M
from flywheel.logs.messages import RecordError, json_kind
from flywheel.logs.traces.common import Step, feedback, iso_time, json_text, record, result_text

MODEL_CALLS = ("chat", "text_completion", "generate_content")
COST_KEYS = ("gen_ai.usage.cost", "llm.usage.cost", "gen_ai.usage.cost_usd")


def any_value(v: Any, where: str) -> Any:
    """An OTLP JSON `AnyValue` as a plain value."""
    if not isinstance(v, dict):
        raise RecordError("wrong_type", where, f"expected an OTLP AnyValue object, got {json_kind(v)}")
    if "stringValue" in v:
        return v["stringValue"]
    if "intValue" in v:
        try:
            return int(v["intValue"])
        except (TypeError, ValueError):
            raise RecordError("wrong_type", where, f"intValue {v['intValue']!r} is not an integer") from None
    if "doubleValue" in v:
        return float(v["doubleValue"])
    if "boolValue" in v:
        return bool(v["boolValue"])
    if "arrayValue" in v:
        return [any_value(x, f"{where}[{i}]") for i, x in enumerate((v["arrayValue"] or {}).get("values") or [])]
    if "kvlistValue" in v:
        return attributes((v["kvlistValue"] or {}).get("values") or [], where)
    if "bytesValue" in v:
        return v["bytesValue"]
    return None


def attributes(kvs: Any, where: str) -> dict[str, Any]:
    if not isinstance(kvs, list):
        raise RecordError("wrong_type", where, f"expected a list of {{key, value}}, got {json_kind(kvs)}")
    out = {}
    for i, kv in enumerate(kvs):
        if not isinstance(kv, dict) or not isinstance(kv.get("key"), str):
            raise RecordError("bad_message", f"{where}[{i}]", "an attribute needs a string 'key'")
        out[kv["key"]] = any_value(kv.get("value", {}), f"{where}.{kv['key']}")
    return out


def _parts_message(m: Any, where: str) -> dict[str, Any]:
    """A GenAI semconv message (`role`, `parts`) as an OpenAI-shaped message."""
    if not isinstance(m, dict) or "role" not in m:
        raise RecordError("bad_message", where, "a GenAI message needs 'role' and 'parts'")
    if "parts" not in m:
        return M.message(m, where)
    texts, calls, out = [], [], {"role": m["role"]}
    for j, p in enumerate(m.get("parts") or []):
        kind = p.get("type") if isinstance(p, dict) else None
        if kind == "text":
            texts.append(str(p.get("content", "")))
        elif kind == "tool_call":
            args = p.get("arguments", {})
            calls.append({"id": p.get("id") or f"call_{j}", "type": "function",
                          "function": {"name": p.get("name"), "arguments": args if isinstance(args, str) else
                                       result_text(args)}})
        elif kind == "tool_call_response":
            out["tool_call_id"] = p.get("id")
            texts.append(result_text(p.get("response", p.get("result", ""))))
        elif kind is None:
            raise RecordError("bad_message", f"{where}.parts[{j}]", "a part needs a 'type'")
    out["content"] = "\n".join(texts) if texts or not calls else None
    if calls:
        out["tool_calls"] = calls
    return M.message(out, where)


def _messages(attrs: dict[str, Any], key: str, where: str) -> list[dict[str, Any]]:
    raw = json_text(attrs.get(key), f"{where}.{key}")
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise RecordError("wrong_type", f"{where}.{key}", f"expected a list of messages, got {json_kind(raw)}")
    return [_parts_message(m, f"{where}.{key}[{i}]") for i, m in enumerate(raw)]


def _spans(rec: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    rs = rec.get("resourceSpans")
    if not isinstance(rs, list):
        raise RecordError("wrong_type", "resourceSpans", f"expected a list, got {json_kind(rs)}")
    out = []
    for i, r in enumerate(rs):
        for j, ss in enumerate((r or {}).get("scopeSpans") or (r or {}).get("instrumentationLibrarySpans") or []):
            for k, span in enumerate((ss or {}).get("spans") or []):
                out.append((f"resourceSpans[{i}].scopeSpans[{j}].spans[{k}]", span))
    if not out:
        raise RecordError("missing_field", "resourceSpans", "the export holds no span")
    return out


def _conversation(span: Any) -> str | None:
    for kv in span.get("attributes") or [] if isinstance(span.get("attributes"), list) else []:
        if isinstance(kv, dict) and kv.get("key") == "gen_ai.conversation.id":
            v = kv.get("value")
            v = next(iter(v.values()), None) if isinstance(v, dict) and v else None
            return str(v) if v not in (None, "") else None
    return None


def split(rec: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """One OTLP export -> (label, export) per trace (traces sharing a `gen_ai.conversation.id` stay together), in
    the order their first span appears; `[("", rec)]` when it holds one. RecordError when a span cannot be placed."""
    spans = _spans(rec)
    group: dict[str, str] = {}  # union-find over trace ids and conversation ids ("t:" / "c:" prefixed)

    def root(x: str) -> str:
        while group.setdefault(x, x) != x:
            group[x] = group[group[x]]
            x = group[x]
        return x

    keys = []
    for where, span in spans:
        if not isinstance(span, dict):
            raise RecordError("wrong_type", where, f"expected a span object, got {json_kind(span)}")
        if not span.get("traceId") or not isinstance(span["traceId"], str):
            raise RecordError("missing_field", f"{where}.traceId", "every span needs its trace id (text)")
        t, c = "t:" + span["traceId"], _conversation(span)
        if c is not None:
            group[root(t)] = root("c:" + c)
        keys.append(t)
    roots = list(dict.fromkeys(root(k) for k in keys))
    if len(roots) == 1:
        return [("", rec)]
    parts: dict[str, dict[str, Any]] = {r: {"resourceSpans": []} for r in roots}
    for r in rec["resourceSpans"]:
        for ss in (r or {}).get("scopeSpans") or (r or {}).get("instrumentationLibrarySpans") or []:
            by_root: dict[str, list[Any]] = {}
            for span in (ss or {}).get("spans") or []:
                by_root.setdefault(root("t:" + span["traceId"]), []).append(span)
            for g, kept in by_root.items():
                out = parts[g]["resourceSpans"]
                if not out or out[-1].get("_of") is not r:
                    out.append({"_of": r, "resource": (r or {}).get("resource") or {}, "scopeSpans": []})
                out[-1]["scopeSpans"].append({"scope": (ss or {}).get("scope") or {}, "spans": kept})
    for p in parts.values():
        for r in p["resourceSpans"]:
            del r["_of"]
    return [(f"trace {g[2:]}" if g.startswith("t:") else f"conversation {g[2:]}", p) for g, p in parts.items()]


def convert(rec: dict[str, Any]) -> dict[str, Any]:
    """One OTLP JSON export of one trace (or of the traces of one conversation) -> its task-log record
    (RecordError naming the field otherwise; `split` first when an export may hold several)."""
    steps, traces, convs = [], set(), set()
    starts, ends, scores = [], [], {}
    usage = {"prompt_tokens": 0, "completion_tokens": 0}
    cost, model, finish, errors, meta = 0.0, None, None, [], {}
    for where, span in _spans(rec):
        if not isinstance(span, dict):
            raise RecordError("wrong_type", where, f"expected a span object, got {json_kind(span)}")
        if not span.get("traceId"):
            raise RecordError("missing_field", f"{where}.traceId", "every span needs its trace id")
        traces.add(span["traceId"])
        attrs = attributes(span.get("attributes") or [], f"{where}.attributes")
        _, start = iso_time(span.get("startTimeUnixNano"), f"{where}.startTimeUnixNano")
        starts.append((start, span["startTimeUnixNano"]))
        if span.get("endTimeUnixNano") is not None:
            ends.append(iso_time(span["endTimeUnixNano"], f"{where}.endTimeUnixNano")[1])
        status = span.get("status") or {}
        if isinstance(status, dict) and any(v in (2, "STATUS_CODE_ERROR") for v in status.values()):  # code ERROR
            errors.append(status.get("message") or span.get("name") or "error")
        for ev in span.get("events") or []:
            if isinstance(ev, dict) and ev.get("name") == "gen_ai.evaluation.result":
                ea = attributes(ev.get("attributes") or [], f"{where}.events")
                if isinstance(ea.get("gen_ai.evaluation.score.value"), (int, float)):
                    scores[str(ea.get("gen_ai.evaluation.name", "score"))] = float(ea["gen_ai.evaluation.score.value"])
        for k in ("task_id", "domain", "flywheel.task_id", "flywheel.domain"):
            if attrs.get(k) is not None:
                meta[k.removeprefix("flywheel.")] = attrs[k]
        if attrs.get("gen_ai.conversation.id"):
            convs.add(attrs["gen_ai.conversation.id"])
        op = attrs.get("gen_ai.operation.name")
        if op in MODEL_CALLS:
            system = json_text(attrs.get("gen_ai.system_instructions"), f"{where}.attributes.gen_ai.system_instructions")
            sys_msgs = [{"role": "system", "content": "\n".join(str(p.get("content", "")) for p in system
                                                                 if isinstance(p, dict))}] if isinstance(system, list) else []
            steps.append(Step(start, [M.message(m, where) for m in sys_msgs]
                              + _messages(attrs, "gen_ai.input.messages", f"{where}.attributes"),
                              _messages(attrs, "gen_ai.output.messages", f"{where}.attributes")))
            usage["prompt_tokens"] += int(attrs.get("gen_ai.usage.input_tokens") or 0)
            usage["completion_tokens"] += int(attrs.get("gen_ai.usage.output_tokens") or 0)
            model = attrs.get("gen_ai.response.model") or attrs.get("gen_ai.request.model") or model
            reasons = attrs.get("gen_ai.response.finish_reasons")
            finish = reasons[-1] if isinstance(reasons, list) and reasons else finish
        elif op == "execute_tool":
            steps.append(Step(start, tool_name=str(attrs.get("gen_ai.tool.name") or span.get("name") or "tool"),
                              tool_id=attrs.get("gen_ai.tool.call.id"),
                              tool_args=json_text(attrs.get("gen_ai.tool.call.arguments"),
                                                  f"{where}.attributes.gen_ai.tool.call.arguments"),
                              tool_result=attrs.get("gen_ai.tool.call.result", "")))
        cost += sum(float(attrs[k]) for k in COST_KEYS if isinstance(attrs.get(k), (int, float)))
    if len(convs) > 1 or (len(traces) > 1 and not convs):
        what = f"{len(convs)} conversations" if len(convs) > 1 else f"{len(traces)} traces"
        raise RecordError("bad_message", "resourceSpans", f"spans of {what} in one record; export one trace per "
                                                          "record (the collector's groupbytrace processor)")
    if not any(s.tool_name is None for s in steps):
        raise RecordError("missing_field", "resourceSpans", "no GenAI model-call span (gen_ai.operation.name chat, "
                                                            "text_completion or generate_content)")
    first = min(starts)
    latency = round((max(ends) - first[0]) * 1000, 3) if ends else None
    trace_id = next(iter(convs or traces))
    outcome = {"latency_ms": latency, **{k: v or None for k, v in usage.items()}, "cost_usd": cost or None,
               "finish_reason": finish, **feedback(scores)}
    if errors:
        outcome.update(status="error", error="; ".join(errors)[:2000])
    return record("otel", str(trace_id), iso_time(first[1], "startTimeUnixNano")[0], steps, "resourceSpans",
                  model=model, metadata=meta, outcome=outcome,
                  extra={"otel_trace_id": min(traces), **({"otel_trace_ids": sorted(traces)} if len(traces) > 1 else {})})
