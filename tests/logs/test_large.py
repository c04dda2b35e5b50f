"""The large-record lane: a line with a field over the cap is checked with that value replaced, and gets
the reason the SQL checks would have given it, line for line (`flywheel.logs.large`)."""

from __future__ import annotations

import json

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from flywheel.logs.arrow_ops import query
from flywheel.logs.ingest import ingest
from flywheel.logs.large import json_size, restore_over_cap, shrink_large, shrink_line
from flywheel.logs.options import IngestOptions
from flywheel.logs.validate_sql import check_order, jsonl_sql

CAP = 4096
BIG = "x" * (3 * CAP)
TRICKY = ('a"b\\c\nd\te\u0001f\u001fg/h\u00e9\u2028\U0001F600' * 400)  # escapes, controls, multibyte, a slash


@pytest.mark.parametrize("value", [
    "", "plain", TRICKY, "\x7f\u0085", {"a": [1, -2, None, True, False, "x\ny"], "é": {}}, [], [[], {}],
    12345678901234, -1, 2**63, "\\u0041 as text",
])
def test_json_size_is_what_duckdb_writes(value):
    line = json.dumps({"v": value})
    [(n,)] = duckdb.sql(f"SELECT strlen(json_extract({_lit(line)}, '$.v'))").fetchall()
    assert json_size(value) == n


# string tokens as a file may write them: every escape JSON allows, raw multibyte text, a pair cut at the head
_TOKENS = [
    r"a\/b\u00e9\u0001\u000a\u0022\u005c\u2028\ud83d\ude00\t\\\"" * 400,
    "é😀\\n" * 900,
    "x" * 197 + r"\ud83d\ude00" * 1200,
    r"\u0041" * 5000,
    json.dumps("C:\\Users\\u0041 \\/ \\\\\"q\\" * 600)[1:-1],  # escaped backslashes before u, /, " and the end
]


@pytest.mark.parametrize("token", _TOKENS)
def test_a_long_string_is_measured_on_its_bytes_as_duckdb_writes_it(token):
    """Its size is DuckDB's `strlen` of the value written back, and its stand-in the value's first 200
    characters, though the lane never decodes the rest."""
    line = '{"id": "' + token + '"}'
    text, [over] = shrink_line(line.encode("utf-8"), CAP)
    [(n,)] = duckdb.sql(f"SELECT strlen(json_extract({_lit(line)}, '$.id'))").fetchall()
    assert over.field == "id" and over.size == n
    whole = json.loads(line)["id"]
    head = json.loads(text)["id"]
    assert 199 <= len(head) <= 200 and whole.startswith(head)


@pytest.mark.parametrize("token", [r"\ud800" + "x" * CAP, "x" * CAP + r"\udc00", "x" * CAP + r"\q", "x" * CAP + "\x01",
                                   r"\ud83d\u0041" + "x" * CAP])
def test_a_long_string_python_and_duckdb_may_read_apart_leaves_the_line_as_written(token):
    assert shrink_line('{"id": "' + token + '"}', CAP) is None


def test_a_long_key_is_left_as_written_and_a_value_like_a_marker_is_kept():
    assert shrink_line('{"' + "k" * CAP + '": 1, "note": "' + BIG + '"}', CAP) is None
    text, over = shrink_line('{"id": "\\u0000\\u0066lywheel:0", "note": "' + BIG + '"}', CAP)
    assert json.loads(text) == {"id": "\x00flywheel:0", "note": BIG[:200]} and [o.field for o in over] == ["extra"]


def _lit(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def _cases(rec) -> list[str]:
    """Lines over the cap in every way the checks see one, and lines the lane must leave as written."""
    msgs = [{"role": "user", "content": BIG}]
    raw = [
        rec(1, messages=msgs),  # the common case
        rec(2, note=BIG),  # an unknown field
        rec(3, extra={"trace": BIG}),  # the `extra` object alone
        rec(4, extra={"a": "b"}, note=BIG, other=BIG),  # several unknown fields
        rec(5, id=BIG),
        rec(6, timestamp=BIG),
        rec(7, domain=..., messages=msgs),  # an earlier check fails first
        rec(8, model=7, note=BIG),
        rec(9, timestamp="yesterday", messages=msgs),  # a later check: the size check comes first
        rec(10, messages=[{"role": "wizard", "content": BIG}]),
        rec(11, messages=msgs, reference={"answer": BIG}),  # two fields over
        rec(12, messages=[{"role": "user", "content": TRICKY}]),
        rec(13, reference={"x": [1.5] * 2000}),  # floats: left as written
        rec(14, reference=[2**70] * 600),
        rec(15, task_id="", note=BIG),
        rec(16, messages=[{"role": "user", "content": "x" * (CAP - 200)}]),  # long line, no field over
        rec(17, outcome=BIG),
        rec(18, messages=[{"role": "user", "content": "y" * (CAP - 40)}]),  # just over / under the cap
        rec(19, messages=[{"role": "user", "content": "y" * (CAP - 39)}]),
        rec(20, messages=[{"role": "user", "content": "y" * (CAP - 38)}]),
        rec(23, note=BIG, extra={"latency_s": 0.25, "n": 2**70}),  # floats beside a surely-over value
        rec(24, messages=[{"role": "user", "content": "q" * 150}, {"role": "tool", "content": BIG}]),
    ]
    lines = [json.dumps(r) for r in raw]
    lines += [
        '{"id": "d1", "id": "d2", "note": "' + BIG + '"}',  # a repeated key
        '{"id": "s1", "note": "\\ud800' + BIG + '"}',  # a lone surrogate: left as written
        "[" + json.dumps(BIG) + "]",  # not an object
        '{"id": "t1", "note": "' + BIG,  # truncated
        json.dumps(rec(21, note=BIG), indent=2).replace("\n", " "),  # whitespace between members
        '{"note": "' + BIG + '", "id": "k1"}',  # missing fields, big field first
        json.dumps(rec(22, note=BIG)).replace('"note"', '"n\\u006fte"'),  # an escaped key
    ]
    return lines


@pytest.mark.parametrize("unit", ["line", "record"])
def test_the_lane_gives_every_line_the_reason_the_checks_give(unit, rec):
    opts = IngestOptions(max_field_bytes=CAP)
    lines = _cases(rec)
    batch = pa.table({"line_no": pa.array(range(1, len(lines) + 1), pa.int64()), "line": pa.array(lines, pa.large_string())})
    con = duckdb.connect()
    sql = jsonl_sql(opts, unit)
    plain = query(con, sql, _b=batch)
    checked, over = shrink_large(batch, CAP)
    lane = restore_over_cap(query(con, sql, _b=checked), over, check_order(opts, unit), unit, CAP)
    want = dict(zip(plain["line_no"].to_pylist(), plain["err"].to_pylist(), strict=True))
    got = dict(zip(lane["line_no"].to_pylist(), lane["err"].to_pylist(), strict=True))
    assert got == want
    assert {1, 2, 3, 4, 5, 6, 11, 17, 21} <= set(over)  # (line 21: rec 23)  # positive control: the lane did shrink them
    assert not {13, 14, 16, 18, 19} & set(over)
    assert want[1]["k"] == "field_too_large" and want[7]["k"] == "missing_field"  # and the reasons differ
    assert max(map(len, checked.filter(pc.is_in(checked["line_no"], pa.array(list(over))))["line"].to_pylist())) < 1000


def test_a_line_without_a_field_over_the_cap_is_left_as_written(rec):
    assert shrink_line(json.dumps(rec(1, note="x" * 100)), CAP) is None
    assert shrink_line("not json", CAP) is None
    text, over = shrink_line(json.dumps(rec(1, note=BIG)), CAP)
    assert [o.field for o in over] == ["extra"] and BIG not in text and json.loads(text)["note"] == BIG[:200]


def test_an_ingest_of_large_records_keeps_their_neighbours_and_reasons(rec, tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    good = [json.dumps(rec(i)) for i in range(50)]
    big = [json.dumps(rec("b1", note=BIG)), json.dumps(rec("b2", messages=[{"role": "user", "content": BIG}]))]
    (logs / "a.jsonl").write_text("\n".join(good[:25] + big + good[25:]) + "\n")
    (logs / "b.json").write_text("[" + ",".join(good[:10] + big) + "]")
    db = tmp_path / "wh.duckdb"
    r = ingest(logs, db, options=IngestOptions(max_field_bytes=CAP))
    assert r.balanced and r.ingested == 50 and r.duplicates == 10 and r.quarantined == 4
    con = duckdb.connect(str(db))
    q = con.sql("SELECT source_line, field, reason, raw FROM quarantine ORDER BY source_file, source_line").fetchall()
    con.close()
    assert [(n, f) for n, f, _, _ in q] == [(26, "extra"), (27, "messages"), (11, "extra"), (12, "messages")]
    assert q[0][2] == "line 26: unknown fields total 0.0 MiB, over the per-field cap"
    assert q[3][2].startswith("record 12: field 'messages' is 0.0 MiB, over the 0.0 MiB per-field cap")
    assert q[0][3].startswith('{"id": "rb1"')  # the line as read, not its stand-in
