"""A folder mixing OTLP JSON, a Langfuse export, LangSmith runs and today's formats ingests with conservation
(every record ingested or quarantined with a reason naming the field), redaction, and each trace one task log
whose messages, outcome, cost and latency are kept, and whose user feedback mining counts; the conversation assembler keeps tool calls in order."""

from __future__ import annotations

import copy
import json

from flywheel.logs.ingest import ingest
from flywheel.logs.options import IngestOptions
from flywheel.logs.traces.common import Step, conversation


def test_conversation_orders_tool_calls_and_skips_repeated_history() -> None:
    user = {"role": "user", "content": "hi"}
    steps = [Step(2.0, tool_name="lookup", tool_id="c1", tool_args={"k": 1}, tool_result={"v": 2}),
             Step(1.0, [user], [{"role": "assistant", "content": "let me look"}]),
             Step(3.0, [user], [{"role": "assistant", "content": "it is 2"}])]
    msgs = conversation(steps, "x")
    assert [m["role"] for m in msgs] == ["user", "assistant", "assistant", "tool", "assistant"]
    assert msgs[2]["tool_calls"][0]["function"] == {"name": "lookup", "arguments": '{"k": 1}'}
    assert msgs[3] == {"role": "tool", "tool_call_id": "c1", "content": '{"v": 2}'}


def test_mixed_folder_ingests_with_conservation_and_redaction(tmp_path, wh, rec, write_jsonl, otel_export,
                                                             langfuse_trace, langsmith_run, retrace,
                                                             batch_export) -> None:
    batch = batch_export(retrace(otel_export, "aaaa", "conv-43"), retrace(otel_export, "bbbb", "conv-44"),
                         retrace(otel_export, "cccc", drop_calls=True))  # 3 traces in one request, one unreadable
    write_jsonl(tmp_path / "otel.jsonl", [otel_export, batch])
    second = copy.deepcopy(langfuse_trace)
    second["id"] = "lf-trace-2"
    (tmp_path / "langfuse.json").write_text(json.dumps([langfuse_trace, second]))  # an export as one JSON array
    child = dict(langsmith_run["child_runs"][0])
    write_jsonl(tmp_path / "langsmith.jsonl", [langsmith_run, child])
    openai = {"request": {"messages": [{"role": "user", "content": "2+2?"}], "metadata": {"task_id": "o1",
                                                                                           "domain": "math"}},
              "response": {"id": "chatcmpl-1", "created": 1764950400, "model": "tiny:v1",
                           "choices": [{"message": {"role": "assistant", "content": "4"}, "finish_reason": "stop"}]}}
    write_jsonl(tmp_path / "today.jsonl", [rec(1), openai])
    report = ingest(tmp_path, wh, options=IngestOptions())
    assert report.balanced and report.lines_read == 10  # 7 lines and records; the OTLP batch counts its 3 traces
    assert (report.ingested, report.quarantined) == (8, 2)
    q = dict(wh.execute("SELECT field, reason FROM quarantine ORDER BY field").fetchall())
    assert set(q) == {"parent_run_id", "resourceSpans"}
    assert "1 of its 3 traces could not be read" in q["resourceSpans"] and "trace cccc" in q["resourceSpans"]
    rows = {r[0]: r[1:] for r in wh.execute(
        "SELECT id, task_id, domain, messages, outcome FROM task_logs").fetchall()}
    assert {"otel-conv-42", "otel-conv-43", "otel-conv-44", "langfuse-lf-trace-1", "langfuse-lf-trace-2",
            "langsmith-8f0b-root"} <= set(rows)
    lines = dict(wh.execute("SELECT id, source_line FROM task_logs WHERE id LIKE 'otel-%'").fetchall())
    assert lines == {"otel-conv-42": 1, "otel-conv-43": 2, "otel-conv-44": 2}  # both from line 2
    _, domain, messages, outcome = rows["otel-conv-42"]
    messages, outcome = json.loads(messages), json.loads(outcome)
    assert domain == "agent" and "ann@example.com" not in json.dumps(messages)
    assert "[REDACTED:EMAIL]" in messages[1]["content"] and report.redactions >= 1
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert outcome["latency_ms"] == 900.0 and outcome["user_feedback"] == "thumbs_up"
    cost = json.loads(rows["langfuse-lf-trace-1"][3])["cost_usd"]
    assert cost == 0.0021 and rows["langfuse-lf-trace-1"][:2] == ("geo-7", "math")
    from flywheel.mining.failures import mine_failures

    mined = mine_failures(wh)  # the user's thumbs are production's judgement: the thumbs-down traces are failures
    failing = {r[0] for r in wh.execute("SELECT id FROM failure_cases").fetchall()}
    assert {"langfuse-lf-trace-1", "langfuse-lf-trace-2"} <= failing and "otel-conv-42" not in failing
    assert mined.failures == len(failing) and mined.passes >= 2
    # what each task cost production, from the traces' cost and token fields (issue 28: cost per task in mining)
    stats = {r[0]: r[1:] for r in wh.execute("SELECT task_id, cost_usd, tokens FROM task_stats").fetchall()}
    assert stats["geo-7"][0] == 0.0021 and stats["conv-42"] == (None, 76.0)  # OTLP: tokens, no cost recorded
    assert abs(mined.cost_usd_total - (2 * 0.0021 + 0.001)) < 1e-12 and mined.cost_usd_per_task_by_domain["math"] == 0.0021  # + LangSmith 0.001
    assert "cost/task (USD)" in mined.markdown() and "| 0.002100 |" in mined.markdown()


def test_format_can_be_forced(tmp_path, wh, write_jsonl, langsmith_run) -> None:
    write_jsonl(tmp_path / "runs.jsonl", [langsmith_run])
    assert ingest(tmp_path, wh, options=IngestOptions(format="langsmith")).ingested == 1
    write_jsonl(tmp_path / "runs.jsonl", [dict(langsmith_run, id="other", trace_id="other")])
    report = ingest(tmp_path, wh, options=IngestOptions(format="otel"))
    assert report.quarantined == 1
    assert wh.execute("SELECT field FROM quarantine").fetchall() == [("resourceSpans",)]


def test_trace_times_read_leap_seconds_and_basic_format() -> None:
    """As the other formats' path does (a leap second is the second after :59, as POSIX time counts it)."""
    import pytest

    from flywheel.logs.messages import RecordError
    from flywheel.logs.traces.common import iso_time

    assert iso_time("2026-12-31T23:59:60Z", "t")[0] == "2027-01-01T00:00:00Z"
    assert iso_time("20261231T235960Z", "t")[0] == "2027-01-01T00:00:00Z"
    assert iso_time("2026-12-31T23:59:60.5+00:00", "t")[0] == "2027-01-01T00:00:00.500000Z"
    assert iso_time("20261201T101010Z", "t")[0] == "2026-12-01T10:10:10Z"
    assert iso_time("1796119200000000000", "t")[0] == "2026-12-01T10:00:00Z"  # OTLP nanoseconds as text
    with pytest.raises(RecordError, match="not an ISO-8601 time"):
        iso_time("2026-12-01T10:60:00Z", "t")  # a 60th minute is no leap second
