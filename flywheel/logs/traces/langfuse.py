"""Langfuse traces, as its API and exports give them (a trace with its `observations` and `scores`), -> one
task-log record.

Read: the trace's `id`, `timestamp`, `metadata` (`task_id`, `domain`), `latency` (seconds), `totalCost`;
each observation's `type` (`GENERATION`: a model call with `input` messages (a list, `{"messages": [...]}` or
JSON text), `output` (a message, a string, or a chat completion's `choices`), `model`, `usageDetails`
(`input`/`output`, or the older `usage` `promptTokens`/`completionTokens`), `costDetails.total`; `TOOL` (or a
`SPAN` whose metadata says `tool`): a tool execution with `input` as arguments and `output` as result),
`startTime`/`endTime`, `level == "ERROR"` with its `statusMessage`; and the `scores` (`name`, `value`,
`stringValue`), which land in `outcome.scores` (a user-feedback score as `user_feedback`).
"""

from __future__ import annotations

from typing import Any

from flywheel.logs import messages as M
from flywheel.logs.messages import RecordError, json_kind
from flywheel.logs.traces.common import Step, feedback, iso_time, json_text, record


def _msgs(value: Any, where: str, role: str) -> list[dict[str, Any]]:
    value = json_text(value, where)
    if isinstance(value, dict) and isinstance(value.get("messages"), list):
        value = value["messages"]
    if isinstance(value, dict) and isinstance(value.get("choices"), list) and value["choices"]:
        value = value["choices"][0].get("message")
    if value is None:
        return []
    if isinstance(value, str):
        return [{"role": role, "content": value}]
    if isinstance(value, dict):
        value = [value if "role" in value else {"role": role, **value}]
    if not isinstance(value, list):
        raise RecordError("wrong_type", where, f"expected messages, got {json_kind(value)}")
    return M.messages(value, where)


def convert(rec: dict[str, Any]) -> dict[str, Any]:
    """One Langfuse trace (with observations) -> its task-log record."""
    trace_id = rec.get("id")
    if not isinstance(trace_id, str) or not trace_id:
        raise RecordError("missing_field", "id", "a Langfuse trace needs its 'id'")
    obs = rec.get("observations")
    if not isinstance(obs, list):
        raise RecordError("wrong_type", "observations", f"expected a list, got {json_kind(obs)}")
    steps, model, prompt_t, completion_t, cost, errors, ends = [], None, 0, 0, 0.0, [], []
    for i, o in enumerate(obs):
        where = f"observations[{i}]"
        if not isinstance(o, dict):
            raise RecordError("wrong_type", where, f"expected an observation object, got {json_kind(o)}")
        _, start = iso_time(o.get("startTime"), f"{where}.startTime")
        if o.get("endTime"):
            ends.append(iso_time(o["endTime"], f"{where}.endTime")[1])
        if o.get("level") == "ERROR":
            errors.append(str(o.get("statusMessage") or o.get("name") or "error"))
        kind = o.get("type")
        if kind == "GENERATION":
            steps.append(Step(start, _msgs(o.get("input"), f"{where}.input", "user"),
                              _msgs(o.get("output"), f"{where}.output", "assistant")))
            model = o.get("model") or model
            u = o.get("usageDetails") or o.get("usage") or {}
            prompt_t += int(u.get("input") or u.get("promptTokens") or 0)
            completion_t += int(u.get("output") or u.get("completionTokens") or 0)
            c = o.get("costDetails") or {}
            cost += float(c.get("total") or o.get("calculatedTotalCost") or 0)
        elif kind == "TOOL" or (kind == "SPAN" and (o.get("metadata") or {}).get("tool")):
            steps.append(Step(start, tool_name=str(o.get("name") or "tool"), tool_id=o.get("id"),
                              tool_args=json_text(o.get("input"), f"{where}.input"), tool_result=o.get("output")))
    if not any(s.tool_name is None for s in steps):
        raise RecordError("missing_field", "observations", "no GENERATION observation (a model call)")
    scores = {}
    for j, s in enumerate(rec.get("scores") or []):
        if not isinstance(s, dict) or not s.get("name"):
            raise RecordError("bad_message", f"scores[{j}]", "a score needs a 'name'")
        v = s.get("value")
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            scores[str(s["name"])] = float(v)
        elif isinstance(v, bool) or s.get("stringValue") in ("True", "False", "true", "false"):
            scores[str(s["name"])] = float(v is True or str(s.get("stringValue")).lower() == "true")
    started, t0 = iso_time(rec.get("timestamp"), "timestamp")
    latency = rec.get("latency")
    latency_ms = round(float(latency) * 1000, 3) if isinstance(latency, (int, float)) else (
        round((max(ends) - t0) * 1000, 3) if ends else None)
    outcome = {"latency_ms": latency_ms, "prompt_tokens": prompt_t or None, "completion_tokens": completion_t or None,
               "cost_usd": rec.get("totalCost") if isinstance(rec.get("totalCost"), (int, float)) else cost or None,
               **feedback(scores)}
    if errors:
        outcome.update(status="error", error="; ".join(errors)[:2000])
    extra = {k: rec[k] for k in ("sessionId", "userId", "tags", "name") if rec.get(k) is not None}
    return record("langfuse", trace_id, started, steps, "observations", model=model,
                  metadata=rec.get("metadata") or {}, outcome=outcome, extra=extra)
