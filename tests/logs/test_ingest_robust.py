"""Adversarial input: a bad file (or link) never stops the run, never loses another file's rows,
and the conservation law holds; links never read outside the folder, nor one file twice."""

from __future__ import annotations

import json
import os

import duckdb
import pytest

from flywheel.logs.ingest import ingest


def _run(folder, tmp_path):
    db = tmp_path / "wh.duckdb"
    r = ingest(folder, db)
    assert r.balanced
    con = duckdb.connect(str(db))
    q = con.sql("SELECT source_file, kind, reason FROM quarantine ORDER BY 1, source_line").fetchall()
    ids = {x for (x,) in con.sql("SELECT id FROM task_logs").fetchall()}
    con.close()
    return r, q, ids


def _good(folder, rec, name="good.jsonl", ids=(1, 2)):
    (folder / name).write_text("".join(json.dumps(rec(f"g{i}")) + "\n" for i in ids))


@pytest.mark.parametrize("data", [
    b"\xff\xfe\xfa\n\xc3\x28\n\x80\x80\n",  # every line invalid UTF-8
    "\n".join(['{"id": "u16", "task_id": "t"}'] * 3).encode("utf-16"),  # UTF-16 with a BOM
    b"\xc3\x28" * 1000,  # one long invalid line, no newline
])
def test_a_file_of_only_invalid_utf8_is_quarantined_line_by_line(data, rec, tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "a_bad.jsonl").write_bytes(data)
    _good(logs, rec)
    r, q, ids = _run(logs, tmp_path)
    assert ids == {"rg1", "rg2"}  # positive control: the good file's rows are kept
    bad = [k for f, k, _ in q if f.endswith("a_bad.jsonl")]
    assert bad and "invalid_utf8" in bad and set(bad) <= {"invalid_utf8", "invalid_json"}  # UTF-16 NULs decode
    assert r.quarantined == len(bad) and r.ingested == 2


@pytest.mark.parametrize("ts", ["Infinity", "0000-01-01T00:00:00Z", "10000-01-01T00:00:00Z", "-0001-01-01T00:00:00Z"])
def test_a_timestamp_that_breaks_a_file_never_stops_the_run(ts, rec, tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "a_ts.jsonl").write_text(json.dumps(rec("x", timestamp=ts)) + "\n")
    _good(logs, rec, "b.jsonl")
    _good(logs, rec, "c.jsonl", ids=(3,))
    r, q, ids = _run(logs, tmp_path)
    assert {"rg1", "rg2", "rg3"} <= ids  # files before and after the bad one are kept
    assert "rx" not in ids
    assert any(f.endswith("a_ts.jsonl") for f, _, _ in q)
    assert r.lines_read == r.ingested + r.quarantined + r.duplicates


def test_deep_nesting_with_a_secret_never_stops_the_run(rec, tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    deep = json.dumps(rec("deep", reference="X")).replace(
        '"X"', "[" * 5000 + '"sk-abcdefghijklmnopqrstuvwxyz0123456789"' + "]" * 5000)
    (logs / "a_deep.jsonl").write_text(deep + "\n" + json.dumps(rec("same-file")) + "\n")
    _good(logs, rec)
    r, q, ids = _run(logs, tmp_path)
    assert {"rg1", "rg2"} <= ids
    con = duckdb.connect(str(tmp_path / "wh.duckdb"))
    text = " ".join(str(x) for row in con.sql("SELECT * FROM task_logs").fetchall() for x in row)
    text += " ".join(str(x) for row in con.sql("SELECT raw, reason FROM quarantine").fetchall() for x in row)
    assert "sk-abcdefghijklmnopqrstuvwxyz0123456789" not in text  # redacted wherever it went


def _link_tree(tmp_path, rec):
    outside = tmp_path / "secret"
    outside.mkdir()
    (outside / "s.jsonl").write_text(json.dumps(rec("outside")) + "\n")
    logs = tmp_path / "logs"
    logs.mkdir()
    _good(logs, rec)
    return outside, logs


@pytest.mark.parametrize("kind", ["file", "folder", "dangling"])
def test_a_link_leaving_the_folder_is_quarantined_not_read(kind, rec, tmp_path):
    outside, logs = _link_tree(tmp_path, rec)
    if kind == "file":
        os.symlink(outside / "s.jsonl", logs / "x.jsonl")
    elif kind == "folder":
        os.symlink(outside, logs / "sub")
    else:
        os.symlink(tmp_path / "nowhere.jsonl", logs / "x.jsonl")
    r, q, ids = _run(logs, tmp_path)
    assert "routside" not in ids and ids == {"rg1", "rg2"}
    if kind != "dangling" or q:
        assert len(q) == 1 and q[0][1] == "unreadable_file"
        assert "not read" in q[0][2]


@pytest.mark.parametrize("kind", ["file_link", "folder_loop", "two_links"])
def test_the_same_real_file_is_read_once(kind, rec, tmp_path):
    logs = tmp_path / "logs"
    (logs / "d").mkdir(parents=True)
    _good(logs / "d", rec)
    if kind == "file_link":
        os.symlink(logs / "d" / "good.jsonl", logs / "again.jsonl")
    elif kind == "folder_loop":
        os.symlink(logs, logs / "d" / "loop")
    else:
        os.symlink(logs / "d" / "good.jsonl", logs / "a.jsonl")
        os.symlink(logs / "d" / "good.jsonl", logs / "b.jsonl")
    r, q, ids = _run(logs, tmp_path)
    assert ids == {"rg1", "rg2"} and r.ingested == 2 and r.duplicates == 0
    assert all("read once" in reason or "not read" in reason for _, _, reason in q)
    if kind == "folder_loop":  # the loop is not walked (it was listed 40 times, one entry each)
        assert q == [] and r.files == 1


def test_a_link_inside_the_folder_is_read(rec, tmp_path):
    logs = tmp_path / "logs"
    (logs / "real").mkdir(parents=True)
    _good(logs / "real", rec, "_hidden_name.jsonl")
    os.symlink(logs / "real" / "_hidden_name.jsonl", logs / "visible.jsonl")
    r, q, ids = _run(logs, tmp_path)
    assert ids == {"rg1", "rg2"} and not q


def test_the_callers_progress_error_still_stops_and_undoes_the_run(rec, tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    _good(logs, rec)

    def boom(n: int) -> None:
        raise KeyError("stop")

    with pytest.raises(KeyError):
        ingest(logs, tmp_path / "wh.duckdb", progress=boom)


_ALIASES = ["err", "raw", "h", "line_no", "file_row_number", "n_id", "n_task_id", "n_messages", "n_timestamp",
            "n_extra", "m_err", "jt_messages", "jt_outcome", "v", "t", "s", "ts", "ok", "top", "x_extra",
            "j_id", "s_task_id", "t_messages", "_c0", "_c1", "_b", "i", "v0"]


@pytest.mark.parametrize("remote", [False, True])
def test_parquet_columns_named_like_internal_aliases_never_shadow_fields(remote, rec, tmp_path):
    """Local Parquet (read by DuckDB) and any other filesystem (pyarrow batches): file columns named
    like the SQL's internal aliases end up in `extra` under their own names; id, task_id, messages
    and validation are untouched (the bad row is still quarantined)."""
    import uuid
    from concurrent.futures import ThreadPoolExecutor

    import pyarrow as pa
    import pyarrow.fs as pafs
    import pyarrow.parquet as pq

    from flywheel.logs.load import Loader
    from flywheel.logs.options import IngestOptions, IngestReport
    from flywheel.logs.sources import SourceFile
    from flywheel.warehouse import connect
    from flywheel.warehouse.tables import ensure_tables

    rows = [rec(f"p{i}") for i in range(3)] + [rec("bad", task_id=None)]
    cols = {k: [json.dumps(r[k]) if k in ("messages", "outcome", "reference") else r.get(k) for r in rows]
            for k in rows[0]}
    evil = {a: [f"EVIL-{a}"] * len(rows) for a in _ALIASES}
    pq.write_table(pa.table({**cols, **evil}), tmp_path / "p.parquet")
    fs = pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem()) if remote else pafs.LocalFileSystem()
    path = "p.parquet" if remote else str(tmp_path / "p.parquet")
    con = connect(tmp_path / "wh.duckdb")
    ensure_tables(con)
    r = IngestReport(run_id=uuid.uuid4().hex)
    with ThreadPoolExecutor(2) as pool:
        loader = Loader(con, IngestOptions(), None, r, None, pool)
        loader.load_parquet(SourceFile(fs, path, "p.parquet", "parquet"))
        loader.finish()
    assert r.balanced and r.ingested == 3 and r.quarantined == 1, r
    got = con.sql("SELECT id, task_id, messages, extra FROM task_logs ORDER BY id").fetchall()
    assert [g[0] for g in got] == ["rp0", "rp1", "rp2"]
    for i, (_, task_id, messages, extra) in enumerate(got):
        assert task_id == f"tp{i}" and "EVIL" not in messages
        assert json.loads(extra) == {a: f"EVIL-{a}" for a in _ALIASES}  # kept, under their own names
    (kind, reason), = con.sql("SELECT kind, reason FROM quarantine").fetchall()
    assert kind == "missing_field" and "task_id" in reason
    con.close()


@pytest.mark.parametrize("ts,ok", [
    ("2026-12-01t10:00:00z", True), ("2026-12-01T10:00:00,5Z", True), ("2026-12-01T10:00:00.123456789+14:00", True),
    ("2026-12-01T10:00:00", True), ("2026-12-01 10:00:00-05:30", True), ("0001-01-01T00:00:00Z", True),
    ("epoch", False), ("2026-12-01T10:00:00+25:00", False), ("Infinity", False), ("infinity", False),
    ("-infinity", False), ("0000-01-01T00:00:00Z", False), ("10000-01-01T00:00:00Z", False),
    ("2026-13-01T00:00:00Z", False), ("allballs", False), ("now", False),
    ("2016-12-31T23:59:60Z", True), ("2016-12-31T08:59:60.5+09:00", True), ("20261201T100000Z", True),
    ("20261201t100000,5+0100", True), ("20261301T100000Z", False), ("2026-12-01T10:60:00Z", False),
    ("2026-12-01T10:59:61Z", False), ("20261201", False),
])
def test_timestamps_rfc3339_accepted_others_refused_per_line(ts, ok, rec, tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "a.jsonl").write_text(json.dumps(rec("x", timestamp=ts)) + "\n" + json.dumps(rec("same")) + "\n")
    r, q, ids = _run(logs, tmp_path)
    assert "rsame" in ids  # the good line of the same file
    assert ("rx" in ids) == ok
    if not ok:
        assert [k for _, k, _ in q] == ["bad_timestamp"]


@pytest.mark.parametrize("when", ["0001-01-01", "9999-12-31"])
def test_parquet_timestamp_columns_at_the_edges(when, rec, tmp_path):
    import datetime as dt

    import pyarrow as pa
    import pyarrow.parquet as pq

    r0 = rec("e")
    t = pa.table({"id": ["e"], "timestamp": pa.array([dt.datetime.fromisoformat(when)], pa.timestamp("us")),
                  "task_id": ["t"], "domain": ["math"], "model": ["m"],
                  "messages": [json.dumps(r0["messages"])], "outcome": ["{}"]})
    logs = tmp_path / "logs"
    logs.mkdir()
    pq.write_table(t, logs / "e.parquet")
    r, q, ids = _run(logs, tmp_path)
    assert ids == {"e"} and not q


@pytest.mark.parametrize("text", ['{"x": NaN}', '{"x": Infinity}', '{"x": -Infinity}', '[1, NaN]'])
def test_nan_and_infinity_are_not_json(text, rec, tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    line = json.dumps(rec("n", outcome={"x": "PLACEHOLDER"})).replace('"PLACEHOLDER"', text)
    ok = json.dumps(rec("ok", outcome={"note": "NaN and Infinity as text are fine"}))
    (logs / "a.jsonl").write_text(line + "\n" + ok + "\n")
    r, q, ids = _run(logs, tmp_path)
    assert ids == {"rok"}
    assert [k for _, k, _ in q] == ["invalid_json"] and "not valid JSON" in q[0][2]


@pytest.mark.parametrize("line", [
    '{"id": "d1", "task_id": "a", "task_id": "b"}',
    '{"id": "d1", "id": "d2"}',
    '{"id": "d1", "messages": [], "messages": [{"role": "user", "content": "x"}]}',
    '{"id": "d1", "reference": null, "reference": {"answer": "1"}}',  # a repeat whose first value is null
    '{"id": "d1", "domain": "math", "domain": "math"}',  # the same value twice is still ambiguous JSON
    '{"id": "d1", "\\u0074ask_id": "a", "task_id": "b"}',  # one spelt with an escape
    '{"id": "d1", "note": 1, "note": 2}',  # an unknown field twice
    '{"id": "d1", "note": 1, "task_id": "a", "task_id": "b"}',  # a known one twice beside an unknown one
    '{"id": "d1", "note": 1, "other": 2, "other": 3}',
])
def test_duplicate_keys_are_quarantined(line, rec, tmp_path):
    base = {k: v for k, v in rec("z").items() if k not in json.loads(line)}
    text = line[:-1] + ", " + json.dumps(base)[1:]
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "a.jsonl").write_text(text + "\n" + json.dumps(rec("ok")) + "\n")
    r, q, ids = _run(logs, tmp_path)
    assert ids == {"rok"} and [k for _, k, _ in q] == ["duplicate_key"]


@pytest.mark.parametrize("n", [2**63, 2**64, 2**64 + 1, 10**30, -(2**63) - 1, -(10**40)])
def test_integer_ids_beyond_64_bits_are_kept_as_their_text(n, rec, tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "a.jsonl").write_text(json.dumps(rec("x", id=n)) + "\n" + json.dumps(rec("ok")) + "\n")
    r, q, ids = _run(logs, tmp_path)
    assert ids == {str(n), "rok"} and not q
    r2, _, _ = _run(logs, tmp_path)  # re-ingest: the same key
    assert r2.duplicates == 2 and r2.ingested == 0


@pytest.mark.parametrize("fields", [
    {"note": 1},  # an unknown field: kept in extra, no repeat
    {"note": 1, "other": {"id": 1, "task_id": 2}},  # known names nested inside an unknown field
    {"outcome": {"id": "o", "model": "m", "outcome": {"outcome": 1}}},  # known names nested in a known one
    {"reference": None},  # a known field present with null
    {"id": ...},  # no id at all
])
def test_no_repeat_no_duplicate_key_verdict(fields, rec, tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "a.jsonl").write_text(json.dumps(rec("x", **fields)) + "\n")
    r, q, ids = _run(logs, tmp_path)
    assert r.ingested == 1 and not q, q


def test_unknown_fields_are_kept_as_written_in_document_order(tmp_path, wh):
    """`extra` holds exactly the unknown top-level fields, in the record's order, each value as written
    (compact), keys escaped; known names nested inside them stay; a record with none has no `extra`."""
    from flywheel.logs.ingest import ingest

    base = ('"timestamp": "2026-12-01T00:00:00Z", "task_id": "t", "domain": "math", "model": "m", '
            '"messages": [{"role": "user", "content": "hi"}], "outcome": {"passed": true}')
    lines = ['{"zeta": [1, {"id": null}], "id": "a", ' + base + ', "extra": {"usage": {"total": 3}}, "alpha": null}',
             '{"id": "b", "k\\"ey": "v\\u00e9", "a\\\\b": 1.50, ' + base + '}',
             '{"id": "c", ' + base + '}',
             '{"id": "d", ' + base + ', "extra": {"k\\"ey": [1.50, "\u00e9", null]}}',  # the common case: `extra` alone
             '{"id": "e", ' + base + ', "extra": 1, "extra": 2}']
    (tmp_path / "a.jsonl").write_text("\n".join(lines) + "\n")
    ingest(tmp_path / "a.jsonl", wh)
    got = dict(wh.execute("SELECT id, extra FROM task_logs").fetchall())
    assert got == {"a": '{"zeta":[1,{"id":null}],"extra":{"usage":{"total":3}},"alpha":null}',
                   "b": '{"k\\"ey":"vé","a\\\\b":1.5}', "c": None, "d": '{"extra":{"k\\"ey":[1.5,"é",null]}}'}
    assert wh.execute("SELECT kind FROM quarantine").fetchall() == [("duplicate_key",)]


def test_leap_seconds_and_basic_format_store_the_instant_they_mean(rec, tmp_path, wh):
    from flywheel.logs.ingest import ingest

    stamps = {"a": "2016-12-31T23:59:60Z", "b": "20261201T100000,5+0100"}
    (tmp_path / "a.jsonl").write_text("".join(json.dumps(rec(k, timestamp=v)) + "\n" for k, v in stamps.items()))
    ingest(tmp_path / "a.jsonl", wh)
    got = dict(wh.execute("SELECT id, strftime(timestamp, '%Y-%m-%dT%H:%M:%S.%f') FROM task_logs").fetchall())
    assert got == {"ra": "2017-01-01T00:00:00.000000", "rb": "2026-12-01T09:00:00.500000"}
