"""Log formats users export, each turned into the one canonical task-log record at ingest.

- `flywheel`: the project's own schema (`docs/ingest.md`); its messages are normalised too.
- `openai`: an OpenAI Chat Completions exchange: the request's `messages` plus the response's
  `choices[0].message`, either side by side at the top level or as `{"request": {...}, "response": {...}}`;
  epoch `created`, `usage`, `finish_reason` and `metadata.task_id` / `metadata.domain` are read.
- `sharegpt`: `conversations` of `{"from", "value"}` turns.

`auto` picks the format per record when only one fits; a record no format fits (or more than one)
is quarantined with the reason. Messages end up in the shape `flywheel.logs.messages` describes.

Only lines that may need it go through Python (`needs_python`): a flywheel record whose messages are
already plain strings is checked by the validation SQL alone, so the fast path stays vectorised.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from flywheel.logs import messages as M
from flywheel.logs.messages import RecordError, json_kind
from flywheel.logs.options import FORMATS
from flywheel.logs.traces import CONVERT as TRACE_CONVERT
from flywheel.logs.traces import NEEDS_PYTHON as TRACE_KEYS
from flywheel.logs.traces import SPLIT as TRACE_SPLIT
from flywheel.logs.traces import detect as detect_trace

SHAREGPT_ROLES: dict[str, str] = {
    "human": "user", "user": "user", "gpt": "assistant", "assistant": "assistant", "chatgpt": "assistant",
    "model": "assistant", "system": "system", "tool": "tool", "function": "tool", "observation": "tool",
    "function_call": "assistant",
}
"""ShareGPT `from` -> canonical role (`function_call` turns become an assistant tool call)."""

_NEEDS_PYTHON = (r'"content"\s*:\s*\[|"function_call"|"refusal"|"conversations"|"choices"|'
                 r'"created"|"request"|"response"')
"""A line matching this (or without `"messages"`) may need more than the SQL checks (RE2)."""
TOOL_CALLS = '"tool_calls"'
"""A line holding this may hold tool calls: Python reads it only when they are not already canonical
(`normalize.CANONICAL_CALLS_SQL` tells)."""


def needs_python(lines: pa.ChunkedArray | pa.Array, fmt: str, max_line_bytes: int) -> tuple[pa.Array, pa.Array]:
    """(`must`, `calls`): `must` is True for the lines Python must read (any non-flywheel record, content
    parts, refusals, epoch timestamps); `calls` for the other flywheel lines that hold tool calls, which
    need Python only when a call or a message is not yet canonical. Lines over the line cap are left to
    the SQL (quarantined unparsed)."""
    small = pc.less_equal(pc.binary_length(lines), max_line_bytes)
    if fmt not in ("auto", "flywheel"):  # other formats and traces (flywheel.logs.traces) are read in Python
        must, calls = pc.and_(pc.is_valid(lines), small), pc.and_(small, pa.scalar(False))
    else:
        must = pc.or_(pc.invert(pc.match_substring(lines, '"messages"')),
                      pc.match_substring_regex(lines, _NEEDS_PYTHON + "|" + TRACE_KEYS))
        calls = pc.and_(pc.and_(pc.invert(must), small), pc.match_substring_regex(lines, TOOL_CALLS))  # RE2: memchr
        must = pc.and_(must, small)
    return tuple(m.combine_chunks() if isinstance(m, pa.ChunkedArray) else m for m in (must, calls))


def detect(rec: dict[str, Any]) -> str:
    """The one format `rec` fits, or RecordError (kind `unknown_format`) saying why none or several do."""
    fits = detect_trace(rec)  # OpenTelemetry, Langfuse, LangSmith traces
    if "conversations" in rec:
        fits.append("sharegpt")
    if "choices" in rec or ("request" in rec and "response" in rec):
        fits.append("openai")
    elif "messages" in rec:
        fits.append("flywheel")
    if len(fits) > 1:
        raise RecordError("unknown_format", None, f"record fits several formats ({' and '.join(fits)}); "
                                                  "pass --format to say which")
    if fits:
        return fits[0]
    if any(k in rec for k in ("timestamp", "task_id", "domain", "model", "outcome")):
        return "flywheel"  # the validation SQL names the field it lacks
    keys = ", ".join(list(rec)[:8]) or "none"
    raise RecordError("unknown_format", None, "record matches no log format (flywheel: 'messages'; OpenAI: "
                                              f"'messages' + 'choices'; ShareGPT: 'conversations'); its keys: {keys}")


def _epoch(v: Any, field: str) -> str:
    """Epoch seconds (or milliseconds, when too large for seconds) as ISO-8601 UTC text."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise RecordError("bad_timestamp", field, f"expected epoch seconds (a number), got {json_kind(v)} {json.dumps(v)[:40]}")
    secs = v / 1000 if abs(v) > 1e11 else v
    try:
        return dt.datetime.fromtimestamp(secs, dt.timezone.utc).isoformat().replace("+00:00", "Z")
    except (OverflowError, OSError, ValueError) as e:
        raise RecordError("bad_timestamp", field, f"{v} is not a usable epoch time ({e})") from e


def _finish(out: dict[str, Any], msgs: list[dict[str, Any]]) -> dict[str, Any]:
    """Canonical messages in, `created` read as the timestamp when there is none, a refusal marked."""
    out["messages"] = msgs
    if out.get("timestamp") is None and "created" in out:
        out["timestamp"] = _epoch(out.pop("created"), "created")
    if M.refused(msgs) and isinstance(out.get("outcome"), dict) and not out["outcome"].get("status"):
        out["outcome"] = {**out["outcome"], "status": "refused"}
    return out


def _top_level_ok(rec: dict[str, Any]) -> bool:
    """Whether the record's own fields pass the first checks of the validation SQL (present, typed):
    when they do not, that SQL names the field -- a top-level fault is reported before a message's."""
    strings = all(isinstance(rec.get(f), str) and rec[f] for f in ("timestamp", "task_id", "domain", "model"))
    return strings and isinstance(rec.get("messages"), list) and isinstance(rec.get("outcome"), dict) \
        and (rec.get("id") is None or isinstance(rec["id"], (str, int)))


def _flywheel(rec: dict[str, Any]) -> dict[str, Any]:
    out = dict(rec)
    if out.get("timestamp") is None and "created" in out:
        out["timestamp"] = _epoch(out.pop("created"), "created")
    if not _top_level_ok(out):  # left as it is for the validation SQL to name the fault
        return out
    return _finish(out, M.messages(out["messages"]))


def _need(obj: dict[str, Any], key: str, kind: type, field: str, what: str) -> Any:
    v = obj.get(key)
    if v is None:
        raise RecordError("missing_field", field, f"{what} needs '{key}'")
    if not isinstance(v, kind):
        raise RecordError("wrong_type", field, f"expected {'a list' if kind is list else 'an object'}, got {json_kind(v)}")
    return v


def _openai(rec: dict[str, Any]) -> dict[str, Any]:
    nested = isinstance(rec.get("request"), dict) and isinstance(rec.get("response"), dict)
    req, resp = (rec["request"], rec["response"]) if nested else (rec, rec)
    pre = ("request.", "response.") if nested else ("", "")
    ms = _need(req, "messages", list, pre[0] + "messages", "an OpenAI chat completion")
    choices = _need(resp, "choices", list, pre[1] + "choices", "an OpenAI chat completion")
    if not choices:
        raise RecordError("missing_field", pre[1] + "choices", "empty: the response has no choice")
    first = choices[0]
    if not isinstance(first, dict):
        raise RecordError("wrong_type", pre[1] + "choices[0]", f"expected an object, got {json_kind(first)}")
    reply = _need(first, "message", dict, pre[1] + "choices[0].message", "an OpenAI choice")
    msgs = M.messages(ms, pre[0] + "messages") + [M.message({"role": "assistant", **reply}, pre[1] + "choices[0].message")]
    consumed = {"request", "response"} if nested else {"messages", "choices", "object"}
    out = {k: v for k, v in rec.items() if k not in consumed}
    if nested:  # the rest of the request (`tools`, `temperature`, ...) and response is kept, in `extra`
        for side, used in ((resp, ("choices", "object")), (req, ("messages", "metadata"))):  # served model first
            out.update((k, v) for k, v in side.items() if k not in used and k not in out)
    meta = {k: v for src in (req, rec) if isinstance(src.get("metadata"), dict) for k, v in src["metadata"].items()}
    for key in ("task_id", "domain"):
        if out.get(key) is None and meta.get(key) is not None:
            out[key] = meta[key]
    for key, src in (("model", (resp, req)), ("id", (resp,)), ("created", (resp,))):
        if out.get(key) is None:
            v = next((s.get(key) for s in src if s.get(key) is not None), None)
            if v is not None:
                out[key] = v
    if len(choices) > 1:  # n > 1: the first is the reply; the others are kept, in `extra`
        out.setdefault("other_choices", choices[1:])
    outcome = out.get("outcome")
    if outcome is None:
        outcome = {}
    if isinstance(outcome, dict):
        usage = resp.get("usage") if isinstance(resp.get("usage"), dict) else {}
        extra = {"prompt_tokens": usage.get("prompt_tokens"), "completion_tokens": usage.get("completion_tokens"),
                 "finish_reason": first.get("finish_reason")}
        outcome = {**{k: v for k, v in extra.items() if v is not None}, **outcome}
    out["outcome"] = outcome
    return _finish(out, msgs)


def _sharegpt(rec: dict[str, Any]) -> dict[str, Any]:
    conv = _need(rec, "conversations", list, "conversations", "a ShareGPT record")
    msgs: list[dict[str, Any]] = []
    if isinstance(rec.get("system"), str) and rec["system"]:
        msgs.append({"role": "system", "content": rec["system"]})
    for i, turn in enumerate(conv):
        path = f"conversations[{i}]"
        if not isinstance(turn, dict):
            raise RecordError("bad_message", path, f"expected a {{\"from\", \"value\"}} object, got {json_kind(turn)}")
        who, value = turn.get("from"), turn.get("value")
        role = SHAREGPT_ROLES.get(who.lower()) if isinstance(who, str) else None
        if role is None:
            raise RecordError("bad_message", f"{path}.from", "missing" if who is None else
                              f"{json.dumps(who)[:40]} is not one of {', '.join(SHAREGPT_ROLES)}")
        if who.lower() == "function_call":
            try:
                call = json.loads(value) if isinstance(value, str) else value
            except ValueError:
                call = None
            if not isinstance(call, dict):
                raise RecordError("bad_message", f"{path}.value", "a function_call turn needs a JSON object "
                                                                  "{\"name\", \"arguments\"}")
            fn = {"name": call.get("name"), "arguments": call.get("arguments", {})}
            msgs.append(M.message({"role": "assistant", "content": None, "tool_calls": [
                {"id": f"call_{i}", "type": "function", "function": fn}]}, path))
            continue
        if not isinstance(value, (str, list)):
            raise RecordError("bad_message", f"{path}.value", "missing" if value is None else
                              f"expected a string, got {json_kind(value)}")
        msgs.append(M.message({"role": role, "content": value}, path))
    out = {k: v for k, v in rec.items() if k not in ("conversations", "system")}
    return _finish(out, msgs)


_CONVERT = {"flywheel": _flywheel, "openai": _openai, "sharegpt": _sharegpt, **TRACE_CONVERT}
assert set(_CONVERT) == set(FORMATS) - {"auto"}


def canonical(rec: dict[str, Any], fmt: str = "auto") -> dict[str, Any]:
    """`rec` (a decoded record in `fmt`, or detected when `auto`) as a flywheel record; RecordError when
    it is not one. Top-level fields are left for the validation SQL to check (required, types)."""
    return _CONVERT[detect(rec) if fmt == "auto" else fmt](rec)


class _Ambiguous(ValueError):
    """Raised while decoding: a key twice in one object, or a number no float can hold."""


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) < len(pairs):
        keys = ", ".join(k for k, _ in pairs)
        raise _Ambiguous("duplicate_key", f"a field appears twice in the object (keys: {keys[:80]}); "
                         "which one is meant is ambiguous")
    return out


def _finite(text: str) -> float:
    v = float(text)
    if v in (float("inf"), float("-inf")):
        raise _Ambiguous("invalid_json", f"the number {text[:40]} is beyond a 64-bit float (it would be stored as "
                         "Infinity, which is not JSON); write it as a string")
    return v


class Expanded(list):
    """What one line holding several traces (an OTLP export) became: one canonical record text or
    `RecordError` per trace, in order. Each counts as a record read (see `Loader._canonical`)."""


def canonical_line(line: str, fmt: str) -> str | RecordError | Expanded:
    """One JSON line as canonical compact JSON text, or its RecordError. A line that is not a JSON
    object comes back as it is: the validation SQL says precisely what is wrong with it. A key twice
    in an object, or a number that overflows a float, is refused (as the SQL path refuses the first).
    A line holding several traces comes back `Expanded`, one entry per trace."""
    try:
        rec = json.loads(line, object_pairs_hook=_unique, parse_float=_finite)
    except _Ambiguous as e:
        return RecordError(e.args[0], None, e.args[1])
    except RecursionError:  # valid JSON, perhaps, but no record of these formats can be read from it
        return RecordError("bad_message", None, _TOO_DEEP)
    except ValueError:
        return line
    if not isinstance(rec, dict):
        return line
    try:
        f = detect(rec) if fmt == "auto" else fmt
        parts = TRACE_SPLIT[f](rec) if f in TRACE_SPLIT else [("", rec)]
        if len(parts) == 1:
            return M.compact(_CONVERT[f](parts[0][1]))
    except RecordError as e:
        return e
    except RecursionError:
        return RecordError("bad_message", None, _TOO_DEEP)
    return Expanded(_one(_CONVERT[f], label, p) for label, p in parts)


def _one(convert: Any, label: str, rec: dict[str, Any]) -> str | RecordError:
    """One trace of a split record, converted; its RecordError says which trace (the field's path is
    within that trace's own export)."""
    try:
        return M.compact(convert(rec))
    except RecordError as e:
        return RecordError(e.kind, e.field, f"{label}: {e.why}")
    except RecursionError:
        return RecordError("bad_message", None, f"{label}: {_TOO_DEEP}")


_TOO_DEEP = ("nested too deeply to convert (Python's JSON reader stops near 1,000 levels); flatten it, or write "
             "it in the flywheel format")
