"""Coding sessions in OpenAI tool-call format: logged, ingested into the warehouse, read back and verified."""

from __future__ import annotations

import json

from flywheel.environments.base import task_from_dict
from flywheel.environments.repo.generator import generate
from flywheel.environments.repo.sessions import gold_text, session_record, to_messages
from flywheel.environments.toolcalls import calls_from_messages, parse_calls
from flywheel.logs.ingest import ingest
from flywheel.warehouse import connect


def test_rollout_text_to_messages_keeps_every_call():
    task = generate("train", 1, seed=8)[0]
    msgs = to_messages(task.prompt, task.solution)
    assert msgs[0] == {"role": "user", "content": task.prompt}
    assert [m["role"] for m in msgs[1:]] == ["assistant", "tool"] * (len(msgs) // 2)
    assert [(c.name, c.arguments) for c in calls_from_messages(msgs)] == [
        (c.name, c.arguments) for c in parse_calls(task.solution)]
    assert all(isinstance(m["tool_calls"][0]["function"]["arguments"], str) for m in msgs if m["role"] == "assistant")


def test_gold_text_from_a_logged_reference(repo_env):
    task = generate("train", 1, seed=8)[0]
    assert repo_env.verify(task, gold_text(task.reference)).reward == 1.0
    assert gold_text({k: v for k, v in task.reference.items() if k != "fix"}) == ""


def test_logged_sessions_ingest_and_verify(tmp_path, repo_env):
    tasks = generate("train", 3, seed=9)
    lines = []
    for i, t in enumerate(tasks):
        text = t.solution if i < 2 else '<tool_call>{"name": "submit", "arguments": {}}</tool_call>'
        lines.append(session_record(t, to_messages(t.prompt, text), "tiny:1", {"passed": i < 2}))
    path = tmp_path / "sessions.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    wh = connect(tmp_path / "wh" / "warehouse.duckdb")
    try:
        report = ingest(path, wh)
        rows = wh.execute("SELECT task_id, domain, messages, reference FROM task_logs ORDER BY task_id").fetchall()
    finally:
        wh.close()
    assert report.ingested == 3 and report.quarantined == 0, report
    by_id = {t.task_id: i for i, t in enumerate(tasks)}
    for task_id, domain, messages, reference in rows:
        task = task_from_dict(domain, {"task_id": task_id, **json.loads(reference)})
        v = repo_env.verify(task, json.loads(messages))
        assert domain == "repo" and v.reward == (1.0 if by_id[task_id] < 2 else 0.0), v
        assert v.details["snapshot_sha256"] == tasks[by_id[task_id]].reference["snapshot_sha256"]
