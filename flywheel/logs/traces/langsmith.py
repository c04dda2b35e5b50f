"""LangSmith runs, as the SDK reads a trace (`Client.read_run(id, load_child_runs=True)`: the root run with its
`child_runs` nested), -> one task-log record.

Read per run: `run_type` (`llm`: a model call; `tool`: a tool execution; `chain` and the rest: structure),
`inputs` / `outputs` (OpenAI-shaped `messages` / `choices`, LangChain's `messages` / `generations` including
serialised `HumanMessage`/`AIMessage`/`ToolMessage` objects, or a tool's `input` / `output`), `start_time` /
`end_time`, `error`, `extra.invocation_params.model` / `extra.metadata.ls_model_name`, `prompt_tokens` /
`completion_tokens`, `total_cost`; on the root: `id` / `trace_id`, `extra.metadata` (`task_id`, `domain`) and
`feedback_stats` (`{key: {"n", "avg"}}`, into `outcome.scores`). A run that has a `parent_run_id` is a child
exported on its own: it is quarantined, naming that field (export root runs with their children).
"""

from __future__ import annotations

from typing import Any

from flywheel.logs import messages as M
from flywheel.logs.messages import RecordError, json_kind
from flywheel.logs.traces.common import Step, feedback, iso_time, json_text, record

LC_ROLES = {"HumanMessage": "user", "AIMessage": "assistant", "SystemMessage": "system", "ToolMessage": "tool",
            "human": "user", "ai": "assistant", "system": "system", "tool": "tool", "AIMessageChunk": "assistant"}


def _lc_message(m: Any, where: str) -> dict[str, Any]:
    """A LangChain message (serialised `{"lc", "id", "kwargs"}`, or `{"type", "content"}`) or an OpenAI one."""
    if isinstance(m, dict) and "role" in m:
        return M.message(m, where)
    if isinstance(m, dict) and isinstance(m.get("kwargs"), dict):
        kind, kw = (m.get("id") or ["?"])[-1], m["kwargs"]
    elif isinstance(m, dict) and "type" in m:
        kind, kw = m["type"], m.get("data", m)
    else:
        raise RecordError("bad_message", where, f"expected a chat message, got {json_kind(m)}")
    role = LC_ROLES.get(kind)
    if role is None:
        raise RecordError("bad_message", where, f"unknown message type {kind!r}")
    out: dict[str, Any] = {"role": role, "content": kw.get("content")}
    calls = kw.get("tool_calls") or []
    if calls:
        out["tool_calls"] = [{"id": c.get("id"), "type": "function",
                              "function": {"name": c.get("name"), "arguments": c.get("args", c.get("arguments", {}))}}
                             for c in calls if isinstance(c, dict)]
    if role == "tool":
        out["tool_call_id"] = kw.get("tool_call_id")
    return M.message(out, where)


def _inputs(inputs: Any, where: str) -> list[dict[str, Any]]:
    inputs = json_text(inputs, where)
    ms = inputs.get("messages") if isinstance(inputs, dict) else None
    if isinstance(ms, list) and ms and isinstance(ms[0], list):  # LangChain: a batch of message lists
        ms = ms[0]
    if isinstance(ms, list):
        return [_lc_message(m, f"{where}.messages[{i}]") for i, m in enumerate(ms)]
    if isinstance(inputs, dict) and isinstance(inputs.get("prompt") or inputs.get("input"), str):
        return [{"role": "user", "content": inputs.get("prompt") or inputs.get("input")}]
    raise RecordError("missing_field", f"{where}.messages", "an llm run's inputs need 'messages' (or 'prompt')")


def _outputs(outputs: Any, where: str) -> list[dict[str, Any]]:
    outputs = json_text(outputs, where)
    if not isinstance(outputs, dict):
        return []
    if isinstance(outputs.get("choices"), list) and outputs["choices"]:
        return [_lc_message(outputs["choices"][0].get("message"), f"{where}.choices[0].message")]
    gens = outputs.get("generations")
    if isinstance(gens, list) and gens:
        g = gens[0][0] if isinstance(gens[0], list) else gens[0]
        if isinstance(g, dict) and g.get("message") is not None:
            return [_lc_message(g["message"], f"{where}.generations[0].message")]
        if isinstance(g, dict):
            return [{"role": "assistant", "content": str(g.get("text", ""))}]
    if isinstance(outputs.get("output"), str):
        return [{"role": "assistant", "content": outputs["output"]}]
    return []


def _walk(run: dict[str, Any], where: str, out: list[tuple[str, dict[str, Any]]]) -> None:
    out.append((where, run))
    for i, child in enumerate(run.get("child_runs") or []):
        if not isinstance(child, dict):
            raise RecordError("wrong_type", f"{where}.child_runs[{i}]", f"expected a run object, got {json_kind(child)}")
        _walk(child, f"{where}.child_runs[{i}]", out)


def convert(rec: dict[str, Any]) -> dict[str, Any]:
    """One LangSmith root run (children nested) -> its task-log record."""
    if rec.get("parent_run_id"):
        raise RecordError("bad_message", "parent_run_id", "a child run exported on its own; export each trace's "
                                                          "root run with its child_runs")
    runs: list[tuple[str, dict[str, Any]]] = []
    _walk(rec, "run", runs)
    steps, model, prompt_t, completion_t, cost, errors = [], None, 0, 0, 0.0, []
    for where, run in runs:
        _, start = iso_time(run.get("start_time"), f"{where}.start_time")
        if run.get("error"):
            errors.append(str(run["error"])[:500])
        kind = run.get("run_type")
        if kind == "llm":
            steps.append(Step(start, _inputs(run.get("inputs"), f"{where}.inputs"),
                              _outputs(run.get("outputs"), f"{where}.outputs")))
            extra = run.get("extra") or {}
            model = ((extra.get("invocation_params") or {}).get("model")
                     or (extra.get("metadata") or {}).get("ls_model_name") or model)
            prompt_t += int(run.get("prompt_tokens") or 0)
            completion_t += int(run.get("completion_tokens") or 0)
            cost += float(run.get("total_cost") or 0)
        elif kind == "tool":
            inputs = json_text(run.get("inputs"), f"{where}.inputs") or {}
            outputs = json_text(run.get("outputs"), f"{where}.outputs") or {}
            args = inputs.get("input", inputs) if isinstance(inputs, dict) else inputs
            steps.append(Step(start, tool_name=str(run.get("name") or "tool"),
                              tool_id=(run.get("extra") or {}).get("tool_call_id") or run.get("id"),
                              tool_args=json_text(args, f"{where}.inputs.input"),
                              tool_result=outputs.get("output", outputs) if isinstance(outputs, dict) else outputs))
    if not any(s.tool_name is None for s in steps):
        raise RecordError("missing_field", "run", "no llm run (a model call) in the trace")
    started, t0 = iso_time(rec.get("start_time"), "start_time")
    end = iso_time(rec["end_time"], "end_time")[1] if rec.get("end_time") else None
    stats = rec.get("feedback_stats") or {}
    scores = {k: float(v["avg"]) for k, v in stats.items() if isinstance(v, dict) and isinstance(v.get("avg"), (int, float))}
    outcome = {"latency_ms": round((end - t0) * 1000, 3) if end else None, "prompt_tokens": prompt_t or None,
               "completion_tokens": completion_t or None, "cost_usd": cost or None, **feedback(scores)}
    if errors:
        outcome.update(status="error", error="; ".join(errors)[:2000])
    meta = ((rec.get("extra") or {}).get("metadata") or {})
    trace_id = str(rec.get("trace_id") or rec.get("id") or "")
    if not trace_id:
        raise RecordError("missing_field", "id", "a LangSmith run needs its 'id' (or 'trace_id')")
    extra = {k: rec[k] for k in ("name", "tags", "session_id") if rec.get(k) is not None}
    return record("langsmith", trace_id, started, steps, "run", model=model, metadata=meta, outcome=outcome,
                  extra=extra)
