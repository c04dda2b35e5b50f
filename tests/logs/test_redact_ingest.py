"""Redaction end to end through ingest: every field and column it is applied to (JSONL and Parquet),
escaped forms, quarantined raw text, and keys that still dedupe. Also: the docs table lists every kind."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from flywheel.logs import redact as R
from flywheel.logs.ingest import ingest
from flywheel.logs.options import IngestOptions

# distinctive parts that must not survive anywhere, however decoded
LEAKS = ["jane.doe@example.com", "jane@example.com", "josé@exämple.com", "AbCdEfGhIjKlMnOpQrStUvWx",
         "7946 0958", "4111 1111 1111 1111", "hf_abcdefghij", "xoxb-1234", "glpat-AbC", "AIzaSyA12345",
         "sk_live_4eC39", "EXAMPLEKEY", "MIIEpAIBAAKCAQEA", "AKIAIOSFODNN7EXAMPLE", "abc/def123456789"]
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----"


def _decoded(v) -> str:
    """All the text in a value, JSON nested in strings and leftover `\\uXXXX` escapes decoded too."""
    if isinstance(v, str):
        out = [v, re.sub(r"\\+u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), v).replace("\\/", "/")]
        if v.strip()[:1] in "{[":
            try:
                out.append(_decoded(json.loads(v)))
            except ValueError:
                pass
        return "\n".join(out)
    if isinstance(v, dict):
        return "\n".join(_decoded(x) for x in v.values())
    if isinstance(v, list):
        return "\n".join(_decoded(x) for x in v)
    return ""


def _leaks(text: str | None) -> list[str]:
    if text is None:
        return []
    try:
        full = _decoded(json.loads(text)) + "\n" + _decoded(text)
    except ValueError:
        full = _decoded(text)
    return [s for s in LEAKS if s in full]


def _records() -> list[dict]:
    call = {"id": "c1", "type": "function",
            "function": {"name": "send", "arguments": '{"to": "jane\\u0040example.com", "key": "hf_abcdefghijKLMNOPQRSTUVWXYZ0123456"}'}}
    base = {"timestamp": "2026-12-01T10:00:00Z", "domain": "agent", "model": "tiny:v1",
            "outcome": {"status": "success"}}
    return [
        {**base, "id": "u-jane.doe@example.com", "task_id": "t-xoxb-1234567890-abcdefghij",
         "model": "ft:sk_live_4eC39HqLyjWDarjtT1zdp7dc",
         "messages": [{"role": "user", "content": "mail josé@exämple.com, call +44 20 7946 0958, card 4111 1111 1111 1111"},
                      {"role": "assistant", "content": None, "tool_calls": [call]},
                      {"role": "tool", "content": "Bearer abc/def123456789 " + PEM}],
         "outcome": {"status": "error", "error": "glpat-AbC_dEf-GhIjKlMnOpQr12 rejected"},
         "reference": {"creds": "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"},
         "note": "AIzaSyA1234567890abcdefghijklmnopqrstuv AKIAIOSFODNN7EXAMPLE"},
        # the same id but another address: must stay a different row
        {**base, "id": "u-john.roe@example.com", "task_id": "t1",
         "messages": [{"role": "user", "content": "key sk-proj-AbCdEfGhIjKlMnOpQrStUvWx0123"}]},
        # honest controls, left byte-identical
        {**base, "id": "h1", "task_id": "math-7", "domain": "math",
         "messages": [{"role": "user", "content": "A shop sells pencils at 35 cents each. How many cents do 12 cost? On 2026-12-01, v1.2.3, sha 3f2a9c1b."},
                      {"role": "assistant", "content": "12 * 35 = 420. The answer is 420."}]},
    ]


def _rows(con) -> dict[str, tuple]:
    return {r[0]: r for r in con.execute(
        "SELECT id, task_id, domain, model, messages, outcome, reference, extra, redactions FROM task_logs").fetchall()}


def _check_clean(con, rep) -> dict[str, tuple]:
    rows = _rows(con)
    for r in rows.values():
        for v in r[:8]:
            assert not _leaks(v), (v, _leaks(v))
    assert rep.redactions == sum(r[8] for r in rows.values()) == sum(rep.redactions_by_kind.values())
    return rows


def test_jsonl_every_field_redacted_keys_dedupe(tmp_path, wh):
    path = tmp_path / "logs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in _records()))
    rep = ingest(path, wh)
    assert rep.ingested == 3
    rows = _check_clean(wh, rep)
    ids = sorted(rows)
    assert sum(i.startswith("[REDACTED:EMAIL]~") for i in ids) == 2  # two addresses, two keys
    assert {"EMAIL", "PHONE", "CREDIT_CARD", "HF_TOKEN", "SLACK_TOKEN", "STRIPE_KEY", "BEARER", "PRIVATE_KEY",
            "GITLAB_TOKEN", "AWS_SECRET", "GOOGLE_API_KEY", "AWS_KEY", "API_KEY"} <= set(rep.redactions_by_kind)
    honest = _records()[2]
    assert json.loads(rows["h1"][4]) == honest["messages"] and rows["h1"][8] == 0
    args = json.loads(rows[[i for i in ids if i != "h1"][0]][4])
    call_args = [m for m in args if m.get("tool_calls")] if isinstance(args, list) else []
    for m in call_args:
        json.loads(m["tool_calls"][0]["function"]["arguments"])  # still JSON
    again = ingest(path, wh)
    assert (again.ingested, again.duplicates) == (0, 3)


def test_parquet_json_text_columns_with_escapes(tmp_path, wh):
    msgs = [
        '[{"role":"user","content":"write to jane.doe\\u0040example.com"}]',
        '[{"role":"user","content":"jos\\u00e9@ex\\u00e4mple.com and sk\\u002dproj-AbCdEfGhIjKlMnOpQrStUvWx0123"}]',
        '[{"role":"user","content":"Bearer abc\\/def123456789"},{"role":"assistant","content":null,"tool_calls":'
        '[{"id":"c","type":"function","function":{"name":"f","arguments":"{\\"to\\":\\"jane\\\\u0040example.com\\"}"}}]}]',
        '[{"role":"user","content":"caf\\u00e9 costs 3.50; 2026-12-01; v1.2.3"}]',
    ]
    n = len(msgs)
    t = pa.table({
        "id": ["p-AKIAIOSFODNN7EXAMPLE", "p2", "p3", "p4"], "timestamp": ["2026-12-01T10:00:00Z"] * n,
        "task_id": ["t"] * n, "domain": ["code", "d-AIzaSyA1234567890abcdefghijklmnopqrstuv", "code", "code"], "model": ["m"] * n, "messages": msgs,
        "outcome": ['{"status":"success","error":"token xox\\u0062-1234567890-abcdefghij"}'] * n,
        "reference": ['{"mail":"jane.doe\\u0040example.com"}'] * n,
    })
    path = tmp_path / "logs.parquet"
    pq.write_table(t, path)
    rep = ingest(path, wh)
    assert rep.ingested == n
    rows = _check_clean(wh, rep)
    assert rows["p4"][4] == msgs[3]  # honest text: not even re-serialised
    assert rows["p2"][2].startswith("d-[REDACTED:GOOGLE_API_KEY]~") and rows["p4"][2] == "code"
    assert sum(i.startswith("p-[REDACTED:AWS_KEY]~") for i in rows) == 1
    assert ingest(path, wh).duplicates == n


def test_quarantine_raw_and_reason_are_redacted(tmp_path, wh):
    good = _records()[2]
    lines = [
        json.dumps({**good, "id": "q1", "timestamp": "yesterday", "note": "jane.doe@example.com " + PEM}),
        json.dumps({**good, "id": "q2", "task_id": 7, "messages": [{"role": "user", "content": "call +44 20 7946 0958"}]}),
        '{"id": "q3", "mail": "jane\\u0040example.com", "key": "AKIAIOSFODNN7EXAMPLE",',  # invalid JSON
        json.dumps({**good, "id": "q4", "domain": ["sk-proj-AbCdEfGhIjKlMnOpQrStUvWx0123"]}),  # reason quotes it
        json.dumps({**good, "id": "q5", "timestamp": 5, "x": "y" * 40 + " sk-proj-AbCdEfGhIjKlMnOpQrStUvWx0123"}),
    ]
    cut = lines[4].index("sk-proj") + 10  # the preview limit falls inside the key
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    rep = ingest(path, wh, options=IngestOptions(raw_preview_chars=cut))
    assert rep.quarantined == 5
    for raw, reason in wh.execute("SELECT raw, reason FROM quarantine").fetchall():
        assert not _leaks(raw) and not _leaks(reason) and "sk-proj" not in raw and "AbCdEf" not in raw, (raw, reason)
        assert len(raw) <= cut
    t = pa.table({"id": ["pq1"], "timestamp": ["nope"], "task_id": ["t"], "domain": ["d"], "model": ["m"],
                  "messages": ['[{"role":"user","content":"jane\\u0040example.com 4111-1111-1111-1111"}]'],
                  "outcome": ["{}"]})
    pq.write_table(t, tmp_path / "bad.parquet")
    assert ingest(tmp_path / "bad.parquet", wh).quarantined == 1
    raw = wh.execute("SELECT raw FROM quarantine WHERE source_file LIKE '%parquet'").fetchall()[0][0]
    assert not _leaks(raw) and "[REDACTED:EMAIL]" in raw


def test_docs_table_lists_every_kind_and_place():
    doc = (Path(__file__).resolve().parents[2] / "docs" / "ingest.md").read_text()
    section = doc.split("## Redaction", 1)[1].split("\n## ", 1)[0]
    kinds = set(re.findall(r"`\[REDACTED:([A-Z_]+)\]`", section))
    assert kinds == set(R.KINDS)
    for place in ("quarantine.raw", "quarantine.reason", "`id`", "`task_id`", "`model`", "`domain`",
                  "`messages`", "`outcome`", "`reference`", "`extra`", "Parquet", "JSONL"):
        assert place in section, place


def test_secrets_in_file_names_are_not_stored(rec, tmp_path, wh):
    folder = tmp_path / "jane@example.com"
    folder.mkdir()
    path = folder / "export-sk-proj-AbCdEfGhIjKlMnOpQrStUvWx0123.jsonl"
    path.write_text(json.dumps(rec(1)) + "\nnot json\n")
    for _ in range(2):  # re-ingest finds the same (redacted) names: nothing new anywhere
        r = ingest(folder, wh)
    assert (r.lines_read, r.duplicates) == (2, 1)
    names = wh.execute("SELECT source_file FROM task_logs UNION ALL SELECT source_file FROM quarantine "
                       "UNION ALL SELECT source FROM ingest_runs").fetchall()
    assert len(names) == 4 and wh.execute("SELECT count(*) FROM quarantine").fetchall() == [(1,)]
    for (n,) in names:
        assert "jane@" not in n and "AbCdEfGh" not in n and "[REDACTED:EMAIL]" in n, n


def test_keys_are_redacted_on_the_python_path_too(rec, tmp_path, wh):
    # an `@` beside a \u escape sends the cell to the Python path, which used to leave keys alone
    (tmp_path / "a.jsonl").write_text(json.dumps(rec(1, outcome={"jane@example.com": "caf\u00e9"}), ensure_ascii=True)
                                      + "\n")
    r = ingest(tmp_path / "a.jsonl", wh)
    assert r.redactions_by_kind == {"EMAIL": 1}
    (outcome,), = wh.execute("SELECT outcome FROM task_logs").fetchall()
    assert "jane" not in outcome and list(json.loads(outcome).values()) == ["café"]
