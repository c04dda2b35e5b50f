"""Redaction: each secret kind is replaced and counted, in SQL and in Python, end to end through ingest."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from flywheel.logs import redact as R
from flywheel.logs.arrow_ops import redact_cells
from flywheel.logs.ingest import ingest
from flywheel.warehouse import connect

SECRETS = {
    "API_KEY": "my key is sk-proj-AbCdEfGhIjKlMnOpQrStUvWx0123 ok",
    "AWS_KEY": "aws AKIAIOSFODNN7EXAMPLE here",
    "GITHUB_TOKEN": "token ghp_0123456789abcdefghijABCDEFGHIJ012345 end",
    "BEARER": "Authorization: Bearer abc123DEF456ghi789",
    "JWT": "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "EMAIL": "write to jane.doe+work@mail.example.co.uk please",
    "PHONE": "call +1 (415) 555-0134 or +44 20 7946 0958",
}
CLEAN = [
    "task-abcdefghijklmnopqrstuvwxyz0123 is a task id, not a key",
    "The answer is 1234567890.",
    "x = 3.14159 and 2026-12-01",
    "pi is 3.141 592 653",
]


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_each_kind_is_redacted_and_counted(kind):
    text = SECRETS[kind]
    out, counts = R.redact_text(text)
    assert f"[REDACTED:{kind}]" in out
    assert counts == {kind: 2 if kind == "PHONE" else 1}
    secret = {"API_KEY": "sk-proj", "AWS_KEY": "AKIA", "GITHUB_TOKEN": "ghp_", "BEARER": "abc123",
              "JWT": "eyJ", "EMAIL": "@", "PHONE": "555"}[kind]
    assert secret not in out
    if kind == "BEARER":
        assert out == "Authorization: Bearer [REDACTED:BEARER]"


@pytest.mark.parametrize("text", CLEAN)
def test_ordinary_text_is_left_alone(text):
    assert R.redact_text(text) == (text, {})


def test_fast_and_python_paths_agree():
    for text in [*SECRETS.values(), *CLEAN]:
        out, counts_fast, _ = redact_cells(pa.array([text]), "messages")
        py_out, counts = R.redact_text(text)
        assert out[0].as_py() == py_out and sum(int(v[0]) for v in counts_fast.values()) == sum(counts.values())
        hit = pc.match_substring_regex(pa.array([text]), R.prefilter_regex("messages"))[0].as_py()
        assert hit or not counts  # the prefilter never misses a finding


def test_phone_numbers_in_outcome_too():
    out, counts = R.redact_json_text(json.dumps({"error": "call 415-555-0134", "mail": "a@b.io"}), "outcome")
    assert json.loads(out) == {"error": "call [REDACTED:PHONE]", "mail": "[REDACTED:EMAIL]"}
    assert counts == {"EMAIL": 1, "PHONE": 1}


def test_ingest_redacts_counts_and_leaves_raw_file_untouched(tmp_path):
    msgs = [{"role": "user", "content": SECRETS["EMAIL"] + "\n" + SECRETS["API_KEY"]},
            {"role": "assistant", "content": "call me: 415-555-0134"}]
    recs = [
        {"id": "a", "timestamp": "2026-12-01T00:00:00Z", "task_id": "t", "domain": "code", "model": "m",
         "messages": msgs, "outcome": {"error": "401: " + SECRETS["BEARER"]}, "reference": {"k": SECRETS["AWS_KEY"]}},
        # an e-mail right after an escaped newline: a JSON-text replacement would eat the `n` of `\n`
        {"id": "b", "timestamp": "2026-12-01T00:00:00Z", "task_id": "t", "domain": "code", "model": "m",
         "messages": [{"role": "user", "content": "hi\njohn@example.com\tghp_0123456789abcdefghijABCDEFGHIJ012345"}],
         "outcome": {}, "notes": SECRETS["JWT"]},
        {"id": "c", "timestamp": "2026-12-01T00:00:00Z", "task_id": "t", "domain": "code", "model": "m",
         "messages": [{"role": "user", "content": CLEAN[0]}], "outcome": {}},
    ]
    path = tmp_path / "pii.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    raw = path.read_bytes()
    con = connect(tmp_path / "w.duckdb")
    rep = ingest(path, con)
    assert path.read_bytes() == raw
    assert rep.redactions_by_kind == {"EMAIL": 2, "API_KEY": 1, "PHONE": 1, "BEARER": 1, "AWS_KEY": 1,
                                      "GITHUB_TOKEN": 1, "JWT": 1}
    assert rep.redactions == 8
    rows = {r[0]: r[1:] for r in con.execute(
        "SELECT id, messages, outcome, reference, extra, redactions FROM task_logs").fetchall()}
    a_msgs, a_out, a_ref, _, a_n = rows["a"]
    assert a_n == 5 and "@" not in a_msgs and "sk-proj" not in a_msgs and "555-0134" not in a_msgs
    assert json.loads(a_out) == {"error": "401: Authorization: Bearer [REDACTED:BEARER]"}
    assert "AKIA" not in a_ref
    b_msgs, _, _, b_extra, b_n = rows["b"]
    assert json.loads(b_msgs)[0]["content"] == "hi\n[REDACTED:EMAIL]\t[REDACTED:GITHUB_TOKEN]"
    assert json.loads(b_extra) == {"notes": "jwt [REDACTED:JWT]"} and b_n == 3
    assert rows["c"][-1] == 0 and CLEAN[0] in rows["c"][0]
    assert con.execute("SELECT sum(redactions) FROM task_logs").fetchall()[0][0] == rep.redactions
