"""What the trace converters share: the conversation assembled from an ordered list of model calls and tool
executions, string-encoded JSON read with the field named, times, and the record they all produce.

A trace becomes one task-log record: `messages` (the conversation, tool calls in order), `outcome` (latency,
token counts, cost, status/error, the tool's scores and user feedback), `timestamp` (the trace's start),
`task_id` / `domain` (from its metadata; else the trace id and `DEFAULT_DOMAIN`), `model` (the served model of
the last model call) and the trace's identity kept beside them (`trace_id`, `trace_format`).
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass, field
from typing import Any

from flywheel.logs import messages as M
from flywheel.logs.messages import RecordError, json_kind

DEFAULT_DOMAIN = "chat"
"""The domain of a trace whose metadata names none."""
FEEDBACK_KEYS = ("user_feedback", "user-feedback", "feedback", "thumbs", "user_score", "user-score")
"""Score names read as the user's thumbs up (>= 0.5) or down (< 0.5)."""


@dataclass
class Step:
    """One model call (`input` messages, `output` messages) or one tool execution (`tool_*`), with its start."""

    start: float
    input: list[dict[str, Any]] = field(default_factory=list)
    output: list[dict[str, Any]] = field(default_factory=list)
    tool_name: str | None = None
    tool_id: str | None = None
    tool_args: Any = None
    tool_result: Any = None


def json_text(value: Any, where: str) -> Any:
    """A value that exporters often write as JSON text (attributes, Langfuse/LangSmith payloads), decoded."""
    if isinstance(value, str) and value[:1] in ("[", "{"):
        try:
            return json.loads(value)
        except ValueError as e:
            raise RecordError("bad_message", where, f"string-encoded JSON does not parse ({e})") from None
    return value


_LEAP = re.compile(r"^(\d{4}-?\d\d-?\d\d[T ]\d\d:?\d\d:?)60((?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?)$")


def iso_time(value: Any, where: str) -> tuple[str, float]:
    """(ISO-8601 UTC text, epoch seconds) of an ISO string or epoch nanoseconds/milliseconds/seconds."""
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        secs = value / 1e9 if abs(value) > 1e14 else value / 1e3 if abs(value) > 1e11 else float(value)
        try:
            t = dt.datetime.fromtimestamp(secs, dt.timezone.utc)
        except (OverflowError, OSError, ValueError) as e:
            raise RecordError("bad_timestamp", where, f"{value} is not a usable epoch time ({e})") from None
    elif isinstance(value, str):
        leap = _LEAP.match(value)  # 23:59:60: the second after :59, as POSIX time (and the SQL path) counts it
        try:
            t = dt.datetime.fromisoformat((leap.expand(r"\g<1>59\2") if leap else value).replace("Z", "+00:00"))
        except ValueError:
            raise RecordError("bad_timestamp", where, f"{value[:40]!r} is not an ISO-8601 time") from None
        t += dt.timedelta(seconds=1) if leap else dt.timedelta(0)
        t = t if t.tzinfo else t.replace(tzinfo=dt.timezone.utc)
    else:
        raise RecordError("bad_timestamp" if value is not None else "missing_field", where,
                          "missing" if value is None else f"expected a time, got {json_kind(value)}")
    return t.astimezone(dt.timezone.utc).isoformat().replace("+00:00", "Z"), t.timestamp()


def tool_message(call_id: str, name: str, args: Any) -> dict[str, Any]:
    arguments = args if isinstance(args, str) else json.dumps(args if args is not None else {})
    return {"role": "assistant", "content": None,
            "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}]}


def result_text(result: Any) -> str:
    return result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)


def conversation(steps: list[Step], where: str) -> list[dict[str, Any]]:
    """The messages of a trace: the first call's input, then in time order each call's new input messages (a
    call that carries the history adds only what is new), its output, and each tool execution not already
    in the conversation as an assistant tool call and its tool result."""
    msgs: list[dict[str, Any]] = []
    for i, s in enumerate(sorted(steps, key=lambda s: s.start)):
        if s.tool_name is not None:
            call_id = s.tool_id or f"call_{i}"
            called = any(tc.get("id") == call_id for m in msgs for tc in m.get("tool_calls") or [])
            answered = any(m.get("role") == "tool" and m.get("tool_call_id") == call_id for m in msgs)
            if not called:
                msgs.append(M.message(tool_message(call_id, s.tool_name, s.tool_args), f"{where}[{i}]"))
            if not answered:
                msgs.append({"role": "tool", "tool_call_id": call_id, "content": result_text(s.tool_result)})
            continue
        new = [m for m in s.input if m not in msgs]
        msgs += new + [m for m in s.output if m not in new]
    if not msgs:
        raise RecordError("missing_field", where, "the trace holds no model call with messages")
    return msgs


def feedback(scores: dict[str, float]) -> dict[str, Any]:
    """`outcome` fields from a trace's named scores: all of them under `scores`, the user's thumbs as
    `user_feedback` and as `passed` (the user accepting the answer is production's own judgement, which mining
    counts; a trace without feedback stays unjudged)."""
    out: dict[str, Any] = {"scores": scores} if scores else {}
    for k in FEEDBACK_KEYS:
        if k in scores:
            out["user_feedback"] = "thumbs_up" if scores[k] >= 0.5 else "thumbs_down"
            out["passed"] = scores[k] >= 0.5
            break
    return out


def record(fmt: str, trace_id: str, started: str, steps: list[Step], where: str, *, model: str | None,
           metadata: dict[str, Any], outcome: dict[str, Any], extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The task-log record of one trace (see the module doc); `outcome`'s None values are dropped."""
    meta = metadata if isinstance(metadata, dict) else {}
    rec = {
        "id": f"{fmt}-{trace_id}",
        "timestamp": started,
        "task_id": str(meta.get("task_id") or trace_id),
        "domain": str(meta.get("domain") or DEFAULT_DOMAIN),
        "model": model or "unknown",
        "messages": conversation(steps, where),
        "outcome": {k: v for k, v in outcome.items() if v is not None},
        "trace_id": trace_id,
        "trace_format": fmt,
    }
    if isinstance(meta.get("reference"), dict):
        rec["reference"] = meta["reference"]
    rec.update(extra or {})
    return rec
