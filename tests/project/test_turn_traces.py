"""A folder of production traces drives a turn end to end (issue 28): a Langfuse export (a JSON array), LangSmith
run trees and one OTLP request holding many traces, dropped into the home's raw-log folder for a day, then
`flywheel turn --day DAY` with the tiny model: every trace ingested, the thumbs-down ones mined as failures of the
team's model, its verifiable math tasks pooled and trained on, with what production paid per task kept."""

from __future__ import annotations

import datetime as dt
import json

TINY = {
    "verifiers": {"max_tasks": 24},
    "rlvr_policy": {"stage": "rl", "steps": 2, "prompts_per_step": 4, "group_size": 4, "max_new_tokens": 24,
                    "checkpoint_every": 0},
    "eval_report": {"n_samples": 1, "tasks_math": 4, "tasks_code": 2, "tasks_agent": 2, "max_new_tokens": 48,
                    "max_steps": 3},
}
DAY = "2026-12-01"
MODEL = "team-model:v3"


def _sum(i):
    a, b = 17 + i, 5 + i % 9
    return f"What is {a} + {b}?", str(a + b), f"Answer: {a + b + 1}"  # the served model is off by one


def _langfuse(i):
    q, gold, said = _sum(i)
    t = f"{DAY}T08:{i % 60:02d}:00.000Z"
    return {"id": f"lf-{i}", "timestamp": t, "totalCost": 0.0002,
            "metadata": {"task_id": f"lf-{i}", "domain": "math", "reference": {"answer": gold}},
            "observations": [{"id": f"g{i}", "type": "GENERATION", "model": MODEL, "startTime": t, "endTime": t,
                              "input": [{"role": "user", "content": q}], "output": said,
                              "usageDetails": {"input": 12, "output": 4}}],
            "scores": [{"name": "user_feedback", "value": 0}]}


def _langsmith(i):
    q, gold, said = _sum(100 + i)
    t = f"{DAY}T09:{i % 60:02d}:00.000000"
    return {"id": f"ls-{i}", "trace_id": f"ls-{i}", "run_type": "chain", "start_time": t, "end_time": t,
            "inputs": {"input": q}, "outputs": {"output": said}, "parent_run_id": None,
            "extra": {"metadata": {"task_id": f"ls-{i}", "domain": "math", "reference": {"answer": gold}}},
            "feedback_stats": {"user_score": {"n": 1, "avg": 0.0}},
            "child_runs": [{"id": f"ls-{i}-llm", "run_type": "llm", "parent_run_id": f"ls-{i}", "start_time": t,
                            "end_time": t, "inputs": {"messages": [{"role": "user", "content": q}]},
                            "outputs": {"choices": [{"message": {"role": "assistant", "content": said}}]},
                            "extra": {"invocation_params": {"model": MODEL}}, "prompt_tokens": 10,
                            "completion_tokens": 3, "total_cost": 0.0001}]}


def _attr(k, v):
    return {"key": k, "value": {"stringValue": v} if isinstance(v, str) else {"intValue": str(v)}}


def _otlp_batch(n):
    """One OTLP export request holding `n` traces (a batch exporter's), chat turns the users liked."""
    spans = []
    for i in range(n):
        ns = str(int(dt.datetime(2026, 12, 1, 10, 0, i, tzinfo=dt.timezone.utc).timestamp()) * 10**9)
        msgs = [{"role": "user", "parts": [{"type": "text", "content": f"Say hi to user {i}"}]}]
        out = [{"role": "assistant", "parts": [{"type": "text", "content": "Hi!"}], "finish_reason": "stop"}]
        spans.append({"traceId": f"{i:032x}", "spanId": f"{i:016x}", "name": "chat", "startTimeUnixNano": ns,
                      "endTimeUnixNano": ns, "attributes": [
                          _attr("gen_ai.operation.name", "chat"), _attr("gen_ai.response.model", MODEL),
                          _attr("gen_ai.input.messages", json.dumps(msgs)),
                          _attr("gen_ai.output.messages", json.dumps(out)), _attr("gen_ai.usage.input_tokens", 5),
                          _attr("gen_ai.usage.output_tokens", 2)]})
    return {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {"name": "app"}, "spans": spans}]}]}


def test_a_folder_of_traces_drives_a_turn(turn_env, capsys):
    from flywheel.cli import main

    folder = turn_env.raw_logs / DAY
    folder.mkdir(parents=True)
    (folder / "langfuse.json").write_text(json.dumps([_langfuse(i) for i in range(30)]))
    (folder / "langsmith.jsonl").write_text("\n".join(json.dumps(_langsmith(i)) for i in range(20)) + "\n")
    (folder / "otel.jsonl").write_text(json.dumps(_otlp_batch(10)) + "\n")
    sets = [f"{asset}.{k}={json.dumps(v)}" for asset, fields in TINY.items() for k, v in fields.items()]
    argv = ["turn", "--day", DAY, "--base-model", "tiny-quick", "--train-budget-s", "0", "--json"]
    code = main(argv + [x for s in sets for x in ("--set", s)])
    out = json.loads(capsys.readouterr().out)
    assert code == 0, out
    data = out["data"]
    assert data["logs_from"].startswith("your logs") and out["traffic_served_by"].startswith("none")
    assert (data["lines_read"], data["ingested"], data["quarantined"]) == (60, 60, 0)  # 30 + 20 + 10 traces
    assert data["pool_model"] == MODEL and data["pool_by_domain"].get("math", 0) > 0
    assert not [c for c in out["checks_failed"] if c["severity"] == "ERROR" and c["asset"] in
                ("task_logs", "task_pool")]
    import duckdb

    con = duckdb.connect(str(turn_env.warehouse), read_only=True)
    try:
        costs = dict(con.execute("SELECT task_id, cost_usd FROM task_stats WHERE task_id IN ('lf-0', 'ls-0')")
                     .fetchall())
        fails = con.execute("SELECT count(*) FROM failure_cases").fetchall()[0][0]
    finally:
        con.close()
    assert costs == {"lf-0": 0.0002, "ls-0": 0.0001} and fails == 50  # the liked OTLP chats are not failures
