"""Ingest of the formats users export (OpenAI Chat Completions, ShareGPT, JSON arrays, gzip, the flywheel
schema with content parts): one canonical record in `task_logs`, nested messages checked, every bad
record quarantined with its file, line, field path and reason, and the conservation law for each."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from flywheel.logs.ingest import ingest
from flywheel.logs.options import IngestOptions
from flywheel.warehouse import connect

FIXTURES = Path(__file__).parent / "fixtures"


def _rows(wh) -> dict[str, dict]:
    out = {}
    for i, ts, task, dom, model, msgs, outcome, extra in wh.execute(
            "SELECT id, strftime(timestamp, '%Y-%m-%dT%H:%M:%SZ'), task_id, domain, model, messages, outcome, extra "
            "FROM task_logs").fetchall():
        out[i] = {"timestamp": ts, "task_id": task, "domain": dom, "model": model, "messages": json.loads(msgs),
                  "outcome": json.loads(outcome), "extra": json.loads(extra) if extra else None}
    return out


def _quarantine(wh) -> dict[int, tuple[str, str, str]]:
    return {n: (k, f, r) for n, k, f, r in wh.execute("SELECT source_line, kind, field, reason FROM quarantine ORDER BY source_line").fetchall()}


def _balanced(r) -> None:
    assert r.lines_read == r.ingested + r.quarantined + r.duplicates, r


def _no_parts_in_text(msgs: list[dict]) -> None:
    for m in msgs:
        assert m["content"] is None or isinstance(m["content"], str)
        assert "image_url" not in (m["content"] or "") and '"type"' not in (m["content"] or "")


def test_openai_chat_completions(wh):
    r = ingest(FIXTURES / "openai_chat.jsonl", wh)
    _balanced(r)
    assert (r.lines_read, r.ingested, r.quarantined, r.duplicates) == (7, 3, 4, 0)
    rows = _rows(wh)
    a = rows["chatcmpl-A1"]
    assert (a["timestamp"], a["task_id"], a["domain"], a["model"]) == (
        "2025-12-01T10:00:00Z", "apples-1", "math", "gpt-4o-mini-2024-07-18")  # epoch `created`, metadata, model
    assert a["messages"] == [
        {"role": "system", "content": "Answer with a number."},
        {"role": "user", "content": "How many apples are in the picture?",
         "parts": [{"type": "image_url", "image_url": {"url": "https://example.org/apples.png", "detail": "low"}}]},
        {"role": "assistant", "content": "There are 7 apples.", "annotations": []},
    ]
    assert a["outcome"] == {"status": "failure", "passed": False, "prompt_tokens": 120, "completion_tokens": 6,
                            "finish_reason": "stop"}
    assert a["extra"] == {"system_fingerprint": "fp_1", "metadata": {"task_id": "apples-1", "domain": "math"},
                          "usage": {"prompt_tokens": 120, "completion_tokens": 6, "total_tokens": 126}}  # nothing dropped
    b = rows["chatcmpl-B2"]  # {"request": ..., "response": ...}; tool call with JSON-string arguments
    assert (b["task_id"], b["domain"], b["model"]) == ("weather-1", "agent", "gpt-4o-2024-08-06")
    assert b["messages"][-1] == {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_abc", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]}
    assert b["extra"]["tools"][0]["function"]["name"] == "get_weather"
    c = rows["chatcmpl-C3"]  # a refusal is marked, never an empty response
    assert c["messages"][-1] == {"role": "assistant", "content": "I'm sorry, I can't help with that.",
                                 "refusal": "I'm sorry, I can't help with that."}
    assert c["outcome"]["status"] == "refused"
    for row in rows.values():
        _no_parts_in_text(row["messages"])
    q = _quarantine(wh)
    assert q[4] == ("bad_message", "choices[0].message.tool_calls[0].function.name",  # paths name the input
                    "line 4: field 'choices[0].message.tool_calls[0].function.name': missing")
    assert q[5] == ("bad_message", "messages[0].content[0].type", "line 5: field 'messages[0].content[0].type': missing part type")
    assert q[6] == ("missing_field", "choices", "line 6: field 'choices': empty: the response has no choice")
    assert q[7][:2] == ("bad_timestamp", "created") and "expected epoch seconds (a number), got string" in q[7][2]
    raw = wh.execute("SELECT raw FROM quarantine WHERE source_line = 4").fetchall()[0][0]
    assert raw.startswith('{"id": "chatcmpl-D4"')  # the line as read, not the rewritten record
    again = ingest(FIXTURES / "openai_chat.jsonl", wh)
    assert (again.ingested, again.duplicates, again.quarantined) == (0, 3, 4)


def test_sharegpt_json_array_numbers_records_by_index(wh):
    r = ingest(FIXTURES / "sharegpt.json", wh)
    _balanced(r)
    assert (r.lines_read, r.ingested, r.quarantined) == (4, 2, 2)
    rows = _rows(wh)
    assert rows["sg-1"]["messages"] == [{"role": "system", "content": "You are a careful calculator."},
                                        {"role": "user", "content": "What is 2+3?"},
                                        {"role": "assistant", "content": "2+3 = 6"}]
    call, obs = rows["sg-2"]["messages"][1:3]
    assert call == {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "search", "arguments": '{"q":"capital of France"}'}}]}
    assert obs == {"role": "tool", "content": "Paris"}
    q = _quarantine(wh)
    assert q[3][:2] == ("bad_message", "conversations[1].from")
    assert q[3][2].startswith("record 3: field 'conversations[1].from': \"robot\" is not one of human, user, gpt")
    assert q[4] == ("bad_message", "conversations[0].value", "record 4: field 'conversations[0].value': missing")
    assert wh.execute("SELECT source_line FROM task_logs ORDER BY 1").fetchall() == [(1,), (2,)]


@pytest.mark.parametrize("name", ["openai_chat.jsonl", "sharegpt.json"])
def test_gzip_exports_read_like_the_plain_file(name, tmp_path, wh):
    gz = tmp_path / (name + ".gz")
    with open(FIXTURES / name, "rb") as f, gzip.open(gz, "wb") as out:
        shutil.copyfileobj(f, out)
    r = ingest(gz, wh)
    _balanced(r)
    assert (r.lines_read, r.ingested, r.quarantined) == ((7, 3, 4) if name.startswith("openai") else (4, 2, 2))


# (message list, field path, reason text): every way a nested message can be malformed
BAD_MESSAGES = [
    (["hello"], "messages[0]", "expected a chat message object, got string"),
    ([{"content": "x"}], "messages[0].role", "missing role"),
    ([{"role": "bot", "content": "x"}], "messages[0].role", '"bot" is not one of system, developer, user'),
    ([{"role": "user", "content": 3}], "messages[0].content", "expected a string or a list of typed parts, got number 3"),
    ([{"role": "user", "content": {"text": "x"}}], "messages[0].content", "expected a string or a list of typed parts, got object"),
    ([{"role": "user", "content": [{"text": "x"}]}], "messages[0].content[0].type", "missing part type"),
    ([{"role": "user", "content": [{"type": "text"}]}], "messages[0].content[0].text", "a 'text' part needs a string 'text'"),
    ([{"role": "user", "content": [7]}], "messages[0].content[0]", "expected a content part object, got number"),
    ([{"role": "assistant", "content": None, "tool_calls": {"id": "c"}}], "messages[0].tool_calls", "expected a list"),
    ([{"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{}"}}]}],
     "messages[0].tool_calls[0].id", "missing tool call id"),
    ([{"role": "assistant", "tool_calls": [{"id": "c", "type": "tool", "function": {"name": "f", "arguments": "{}"}}]}],
     "messages[0].tool_calls[0].type", 'expected "function", got "tool"'),
    ([{"role": "assistant", "tool_calls": [{"id": "c", "type": "function"}]}], "messages[0].tool_calls[0].function", "missing"),
    ([{"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": {"name": "", "arguments": "{}"}}]}],
     "messages[0].tool_calls[0].function.name", 'expected a non-empty string, got ""'),
    ([{"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": 5}}]}],
     "messages[0].tool_calls[0].function.arguments", "expected a JSON string or an object, got number 5"),
    ([{"role": "user", "content": "ok"}, {"role": "assistant", "content": None, "refusal": 1}],
     "messages[1].refusal", "expected a string, got number"),
]


def test_flywheel_records_normalised_and_bad_messages_quarantined(rec, write_jsonl, tmp_path, wh):
    good = [
        rec(0, messages=[{"role": "user", "content": [{"type": "text", "text": "Solve 2x = 6."},
                                                      {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                                                      {"type": "text", "text": "Give x."}]},
                         {"role": "assistant", "content": [{"type": "text", "text": "x = 3"}]}]),
        rec(1, messages=[{"role": "developer", "content": "Be brief."}, {"role": "user", "content": "hi"},
                         {"role": "assistant", "content": [{"type": "refusal", "refusal": "I can't."}]}], outcome={"passed": False}),
        rec(2, domain="agent", messages=[{"role": "user", "content": "go"}, {"role": "assistant", "content": None,
                                         "tool_calls": [{"id": "c1", "type": "function",
                                                         "function": {"name": "move", "arguments": {"dir": "n"}}}]},
                                         {"role": "tool", "tool_call_id": "c1", "content": "ok"}]),
        rec(3, messages=[{"role": "user", "content": "plain"}], created=1764583200),  # fast path, unchanged
        rec(5, domain="agent", messages=[{"role": "assistant", "content": None, "tool_calls": [  # the model's fault:
            {"id": "c2", "type": "function", "function": {"name": "move"}}]}]),  # kept for mining, not quarantined
        rec(4, timestamp=..., created=1764583200),  # epoch `created` when there is no timestamp
    ]
    bad = [rec(10 + i, messages=m) for i, (m, _, _) in enumerate(BAD_MESSAGES)]
    write_jsonl(tmp_path / "fw.jsonl", good + bad)
    r = ingest(tmp_path / "fw.jsonl", wh)
    _balanced(r)
    assert (r.lines_read, r.ingested, r.quarantined) == (len(good) + len(bad), len(good), len(bad))
    rows = _rows(wh)
    assert rows["r0"]["messages"] == [
        {"role": "user", "content": "Solve 2x = 6.\nGive x.",
         "parts": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]},
        {"role": "assistant", "content": "x = 3"}]
    assert rows["r1"]["messages"][-1] == {"role": "assistant", "content": "I can't.", "refusal": "I can't."}
    assert rows["r1"]["outcome"] == {"passed": False, "status": "refused"}
    assert rows["r2"]["messages"][1]["tool_calls"][0]["function"] == {"name": "move", "arguments": '{"dir":"n"}'}
    assert rows["r3"]["messages"] == [{"role": "user", "content": "plain"}] and rows["r3"]["extra"] == {"created": 1764583200}
    assert rows["r4"]["timestamp"] == "2025-12-01T10:00:00Z" and rows["r4"]["extra"] is None
    assert rows["r5"]["messages"][0]["tool_calls"] == [{"id": "c2", "type": "function", "function": {"name": "move"}}]
    q = _quarantine(wh)
    for i, (_, path, why) in enumerate(BAD_MESSAGES):
        n = len(good) + 1 + i
        kind, fld, reason = q[n]
        assert (kind, fld) == ("bad_message", path), reason
        assert reason.startswith(f"line {n}: field '{path}': ") and why in reason, reason


def test_fast_path_and_python_path_give_the_same_reasons(rec, write_jsonl, tmp_path, wh):
    """A message the SQL checks catch (no content parts or tool calls in the line) reads the same as the
    one Python catches in a line it rewrites."""
    msgs = [{"role": "user", "content": 3}]
    write_jsonl(tmp_path / "a.jsonl", [rec(1, messages=msgs),
                                       rec(2, messages=[{"role": "user", "content": [{"type": "text", "text": "x"}]}, *msgs])])
    ingest(tmp_path / "a.jsonl", wh)
    q = _quarantine(wh)
    assert q[1][2] == "line 1: field 'messages[0].content': expected a string or a list of typed parts, got number 3"
    assert q[2][2] == "line 2: field 'messages[1].content': expected a string or a list of typed parts, got number 3"


def test_format_option_and_records_that_fit_no_format(rec, write_jsonl, tmp_path, wh):
    sharegpt = {**rec(5, messages=...), "conversations": [{"from": "human", "value": "hi"}]}
    lines = [rec(1), {"foo": 1, "bar": 2}, {**rec(2), "conversations": []}, sharegpt, [1, 2]]
    write_jsonl(tmp_path / "a.jsonl", lines)
    r = ingest(tmp_path / "a.jsonl", wh)
    _balanced(r)
    assert (r.ingested, r.quarantined) == (2, 3)
    q = _quarantine(wh)
    assert q[2][:2] == ("unknown_format", None) and "matches no log format" in q[2][2] and "foo, bar" in q[2][2]
    assert q[3][:2] == ("unknown_format", None) and "fits several formats (sharegpt and flywheel)" in q[3][2]
    assert q[5][0] == "not_object"
    wh2 = connect(tmp_path / "wh2" / "warehouse.duckdb")
    r2 = ingest(tmp_path / "a.jsonl", wh2, options=IngestOptions(format="sharegpt"))
    _balanced(r2)
    assert (r2.ingested, r2.quarantined) == (2, 3)  # line 3's empty conversation is a record now; line 1 is not
    assert wh2.execute("SELECT kind, reason FROM quarantine WHERE source_line = 1").fetchall() == [
        ("missing_field", "line 1: field 'conversations': a ShareGPT record needs 'conversations'")]
    wh2.close()
    with pytest.raises(ValueError, match="unknown format 'csv'"):
        IngestOptions(format="csv")


def test_a_broken_json_array_loses_only_what_cannot_be_located(rec, tmp_path, wh):
    (tmp_path / "a.json").write_text(json.dumps([rec(1), rec(2)], indent=2)[:-3])  # cut inside record 2
    (tmp_path / "b.json").write_text("\n" + json.dumps([rec(3), "x", rec(3)], indent=2))
    (tmp_path / "c.json").write_text(json.dumps([rec(4)]) + " trailing")  # text after the array
    r = ingest(tmp_path, wh)
    _balanced(r)
    assert (r.lines_read, r.ingested, r.quarantined, r.duplicates) == (7, 3, 3, 1)
    q = {(Path(f).name, n): (k, reason) for f, n, k, reason in
         wh.execute("SELECT source_file, source_line, kind, reason FROM quarantine").fetchall()}
    assert q[("a.json", 2)][0] == "invalid_json" and "truncated JSON" in q[("a.json", 2)][1]
    assert q[("b.json", 2)] == ("not_object", 'record 2: expected one JSON object per record, got varchar "x"')
    assert q[("c.json", 0)][0] == "unreadable_file" and "after the array" in q[("c.json", 0)][1]
    assert sorted(wh.execute("SELECT id FROM task_logs").fetchall()) == [(str(rec(i)["id"]),) for i in (1, 3, 4)]


def test_a_pretty_printed_single_record_is_one_record(rec, tmp_path, wh):
    (tmp_path / "one.json").write_text(json.dumps(rec(1, messages=[{"role": "user", "content": [
        {"type": "text", "text": "hi"}]}]), indent=2))
    (tmp_path / "bad.json").write_text(json.dumps(rec(2), indent=2)[:-2])
    r = ingest(tmp_path, wh)
    _balanced(r)
    assert (r.lines_read, r.ingested, r.quarantined) == (2, 1, 1)
    assert wh.execute("SELECT source_line, messages FROM task_logs").fetchall() == [(1, '[{"role":"user","content":"hi"}]')]
    assert "record 1: truncated JSON" in wh.execute("SELECT reason FROM quarantine").fetchall()[0][0]


def test_parquet_messages_are_checked_too(rec, tmp_path, wh):
    rows = [{**rec(i), "messages": json.dumps(m), "outcome": "{}", "reference": None}
            for i, m in enumerate([[{"role": "user", "content": "ok"}], [{"role": "robot", "content": "x"}],
                                   [{"role": "user", "content": [{"type": "text", "text": "x"}]}]])]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "a.parquet")
    r = ingest(tmp_path / "a.parquet", wh)
    assert (r.ingested, r.quarantined) == (1, 2)
    q = _quarantine(wh)
    assert q[2] == ("bad_message", "messages[0].role",
                    "row 2: field 'messages[0].role': \"robot\" is not one of system, developer, user, assistant, tool, function")
    assert q[3][1] == "messages[0].content" and "Parquet content parts are not normalised" in q[3][2]


def test_parquet_message_contents_screened_on_the_text_are_judged_exactly(rec, tmp_path, wh):
    """Whitespace, an escaped key, a nested or quoted `"content":` neither hide a bad content nor quarantine a
    good one: the guard any cheaper screen of contents on the text (tried, docs/ingest.md) must keep passing."""
    texts = ['[{"role":"user","content" :\n 5}]',  # bad: whitespace around the colon
             '[{"role":"user","c\\u006fntent":{"a":1}}]',  # bad: the key spelt with an escape
             '[{"role":"user","content":"x"},{"role":"tool","content":\ttrue}]',  # bad: the second message
             '[{"role":"assistant","content":"x","meta":{"content":5}}]',  # good: a nested object's content
             '[{"role":"user","content":"a \\"content\\": 5"}]',  # good: the words inside a string
             '[{"role":"us\\u0065r","c\\u006fntent":"ok"}]',  # good: escaped role and key, string content
             '[ { "role" : "user" , "content" : null } ]']  # good
    rows = [{**rec(i), "messages": m, "outcome": "{}", "reference": None} for i, m in enumerate(texts)]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "a.parquet")
    r = ingest(tmp_path / "a.parquet", wh)
    assert (r.ingested, r.quarantined) == (4, 3)
    q = _quarantine(wh)
    assert {n: (k, f) for n, (k, f, _) in q.items()} == {
        1: ("bad_message", "messages[0].content"), 2: ("bad_message", "messages[0].content"),
        3: ("bad_message", "messages[1].content")}
    assert "got number 5" in q[1][2] and "got object" in q[2][2] and "got boolean true" in q[3][2]


def test_mined_prompts_and_responses_hold_text_not_parts(rec, write_jsonl, tmp_path, wh):
    """Content parts logged by the OpenAI SDK reach mining as text: the task pool's prompt and the
    failure's response are the text parts, never JSON."""
    from flywheel.mining import MiningConfig, build_task_pool, mine_failures

    parts = [{"type": "text", "text": "What is 17 + 25?"}, {"type": "image_url", "image_url": {"url": "https://x.org/a.png"}}]
    lines = [rec(f"m{i}", task_id="sum-17", outcome={"status": "failure" if i else "success", "passed": not i},
                 reference={"answer": "42"},
                 messages=[{"role": "user", "content": parts},
                           {"role": "assistant", "content": [{"type": "text", "text": f"The answer is {41 + (i == 0)}."}]}])
             for i in range(4)]
    write_jsonl(tmp_path / "p.jsonl", lines)
    ingest(tmp_path / "p.jsonl", wh)
    cfg = MiningConfig(min_attempts=3)
    mine_failures(wh, cfg)
    build_task_pool(wh, cfg, heldout=[])
    assert wh.execute("SELECT prompt FROM task_pool WHERE task_id = 'sum-17'").fetchall() == [("What is 17 + 25?",)]
    responses = {x for (x,) in wh.execute("SELECT response FROM failure_cases").fetchall()}
    assert responses == {"The answer is 41."}


def test_a_top_level_fault_is_reported_before_a_message_fault(rec, write_jsonl, tmp_path, wh):
    bad_msg = [{"role": "user", "content": [{"text": "no type"}]}]
    write_jsonl(tmp_path / "a.jsonl", [rec(1, task_id={"id": 7}, messages=bad_msg), rec(2, outcome=..., messages=bad_msg)])
    ingest(tmp_path / "a.jsonl", wh)
    assert [(k, f) for k, f, _ in _quarantine(wh).values()] == [("wrong_type", "task_id"), ("missing_field", "outcome")]


@pytest.mark.parametrize(("edit", "kind", "says"), [
    (lambda line: line.replace('"object": "chat.completion"', '"object": "chat.completion", "model": "other"'),
     "duplicate_key", "a field appears twice in the object"),
    (lambda line: line.replace('"index": 0', '"index": 0, "score": 1e999'), "invalid_json", "beyond a 64-bit float"),
])
def test_records_converted_in_python_refuse_what_the_sql_path_refuses(edit, kind, says, tmp_path, wh):
    lines = (FIXTURES / "openai_chat.jsonl").read_text().splitlines()
    (tmp_path / "a.jsonl").write_text("\n".join([lines[0], edit(lines[0]).replace("chatcmpl-A1", "chatcmpl-X"),
                                                 *lines[1:]]) + "\n")
    r = ingest(tmp_path / "a.jsonl", wh, options=IngestOptions(format="openai"))
    _balanced(r)
    assert (r.quarantined, r.ingested) == (5, 3)  # the fixture's own four bad lines, and this one
    (k, reason), = wh.execute("SELECT kind, reason FROM quarantine WHERE source_line = 2").fetchall()
    assert k == kind and says in reason
    assert "Infinity" not in "".join(x for (x,) in wh.execute("SELECT extra FROM task_logs").fetchall() if x)


def test_parquet_float_columns_never_put_nan_into_extra(rec, tmp_path, wh):
    rows = [{**rec(i), "messages": json.dumps(rec(i)["messages"]), "outcome": "{}", "reference": None,
             "timestamp": "2026-12-01T10:00:00Z", "score": x} for i, x in enumerate([1.5, float("nan"), float("-inf")])]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "a.parquet")
    r = ingest(tmp_path / "a.parquet", wh)
    _balanced(r)
    assert (r.ingested, r.quarantined) == (1, 2)
    assert wh.execute("SELECT extra FROM task_logs").fetchall() == [('{"score":1.5}',)]
    assert wh.execute("SELECT source_line, kind, field, reason FROM quarantine ORDER BY 1").fetchall() == [
        (2, "invalid_json", "score", "row 2: field 'score': nan is not a JSON number (write null, or the value as a string)"),
        (3, "invalid_json", "score", "row 3: field 'score': -inf is not a JSON number (write null, or the value as a string)")]


def test_a_deep_openai_record_says_it_is_too_deep(tmp_path, wh):
    line = (FIXTURES / "openai_chat.jsonl").read_text().splitlines()[0]
    deep = line[:-1] + ', "zz": {"x": ' + "[" * 5000 + "]" * 5000 + "}}"
    (tmp_path / "a.jsonl").write_text(deep + "\n" + line + "\n")
    r = ingest(tmp_path / "a.jsonl", wh)
    _balanced(r)
    assert (r.ingested, r.quarantined) == (1, 1)
    (kind, reason), = wh.execute("SELECT kind, reason FROM quarantine").fetchall()
    assert kind == "bad_message" and "nested too deeply" in reason  # it said: missing field 'timestamp'
