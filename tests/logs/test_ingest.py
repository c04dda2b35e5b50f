"""Ingest: good, bad and duplicate input; the conservation law; idempotent re-ingest; formats and URIs."""

from __future__ import annotations

import gzip
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from flywheel.logs.ingest import ingest
from flywheel.logs.options import IngestOptions, IngestReport
from flywheel.logs.sources import SourceFile, list_sources
from flywheel.warehouse import connect
from flywheel.warehouse.tables import task_logs_dir


@pytest.fixture(scope="module")
def bad_lines(rec) -> list[tuple]:
    """Every kind of bad line, each with the reason a person should see (line numbers are 1-based)."""
    return [
        (rec(100)["id"] and json.dumps(rec(100))[:60], "invalid_json", None, "truncated JSON"),
        ('{"id": "x", "timestamp": "2026-12-01T10:00:00Z",, }', "invalid_json", None, "invalid JSON"),
        ("[1, 2, 3]", "not_object", None, "expected one JSON object per line, got array"),
        (rec(101, timestamp=12), "wrong_type", "timestamp", "field 'timestamp': expected ISO-8601 string, got 12"),
        (rec(102, timestamp="yesterday"), "bad_timestamp", "timestamp", "'yesterday' is not an ISO-8601 timestamp"),
        (rec(103, task_id=...), "missing_field", "task_id", "missing required field 'task_id'"),
        (rec(104, model=None), "missing_field", "model", "required field 'model' is null"),
        (rec(105, task_id=7), "wrong_type", "task_id", "field 'task_id': expected string, got 7"),
        (rec(106, messages="hello"), "wrong_type", "messages", "field 'messages': expected JSON array, got varchar"),
        (rec(107, outcome=[1]), "wrong_type", "outcome", "field 'outcome': expected JSON object, got array"),
        (rec(108, domain=""), "wrong_type", "domain", "expected non-empty string"),
        (rec(109, messages=[{"role": "user", "content": "x" * 5000}]), "field_too_large", "messages",
         "field 'messages' is 0.0 MiB, over the 0.0 MiB per-field cap"),
        (b'{"id": "u1", "task_id": "caf\xe9"}', "invalid_utf8", None, "invalid UTF-8 at byte 28"),
        (rec(110, id=[1]), "wrong_type", "id", "field 'id': expected string or integer"),
    ]


OPTS = IngestOptions(max_field_bytes=4096)


def _mixed_file(tmp_path, rec, write_jsonl, bad_lines):
    good = [rec(i) for i in range(5)]
    lines = [good[0], good[1], *[b for b, *_ in bad_lines], good[2], "", "   ", good[3], good[1], good[4]]
    path = tmp_path / "mixed.jsonl"
    write_jsonl(path, lines)
    return path


def test_good_bad_and_duplicate_lines_each_accounted_for(rec, write_jsonl, bad_lines, tmp_path, wh):
    path = _mixed_file(tmp_path, rec, write_jsonl, bad_lines)
    r = ingest(path, wh, options=OPTS)
    assert r.lines_read == 2 + len(bad_lines) + 1 + 3  # blank lines are not records
    assert (r.ingested, r.quarantined, r.duplicates) == (5, len(bad_lines), 1)
    assert r.lines_read == r.ingested + r.quarantined + r.duplicates
    got = wh.execute("SELECT source_line, kind, field, reason, raw, source_file FROM quarantine ORDER BY 1").fetchall()
    assert len(got) == len(bad_lines)
    for (line, kind, fld, reason, raw, src), (_, want_kind, want_field, want_text) in zip(got, bad_lines, strict=True):
        assert (kind, fld) == (want_kind, want_field), reason
        assert reason.startswith(f"line {line}: ") and want_text in reason, reason
        assert raw and src == str(path.resolve())
    assert [g[0] for g in got] == list(range(3, 3 + len(bad_lines)))
    assert r.by_reason["invalid_json"] == 2 and sum(r.by_reason.values()) == r.quarantined
    rows = wh.execute("SELECT id, source_line FROM task_logs ORDER BY id").fetchall()
    assert rows == [("r0", 1), ("r1", 2), ("r2", 3 + len(bad_lines)), ("r3", 6 + len(bad_lines)), ("r4", 8 + len(bad_lines))]
    (run,) = wh.execute("SELECT lines_read, ingested, quarantined, duplicates FROM ingest_runs").fetchall()
    assert run == (r.lines_read, 5, len(bad_lines), 1)


def test_reingest_adds_nothing(rec, write_jsonl, bad_lines, tmp_path, wh):
    path = _mixed_file(tmp_path, rec, write_jsonl, bad_lines)
    first = ingest(path, wh, options=OPTS)
    before = [wh.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0] for t in ("task_logs", "quarantine")]
    again = ingest(f"file://{path}", wh, options=OPTS)
    after = [wh.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0] for t in ("task_logs", "quarantine")]
    assert before == after == [5, len(bad_lines)]
    assert again.ingested == 0 and again.duplicates == first.ingested + first.duplicates
    assert again.quarantined == first.quarantined and again.balanced
    assert wh.execute("SELECT count(*), count(DISTINCT id) FROM task_logs").fetchall() == [(5, 5)]


def test_missing_id_is_a_content_hash_and_extra_fields_are_kept(rec, write_jsonl, tmp_path, wh):
    a = rec(1, id=..., session="s-9", user={"tier": "pro"})
    path = tmp_path / "noid.jsonl"
    write_jsonl(path, [a, json.dumps(a, separators=(" ,  ", " :  ")), rec(2, id=...)])
    r = ingest(path, wh)
    assert (r.ingested, r.duplicates) == (2, 1)  # same record, different whitespace: same key
    ids, extra = zip(*wh.execute("SELECT id, extra FROM task_logs ORDER BY source_line").fetchall(), strict=True)
    assert all(len(i) == 32 for i in ids) and ids[0] != ids[1]
    assert json.loads(extra[0]) == {"session": "s-9", "user": {"tier": "pro"}} and extra[1] is None


def test_log_date_stamps_rows_and_defaults_to_record_date(rec, write_jsonl, tmp_path, wh):
    write_jsonl(tmp_path / "a.jsonl", [rec(1, timestamp="2026-11-30T23:59:59+00:00"), rec(2, timestamp="2026-12-02T01:00:00+02:00")])
    ingest(tmp_path / "a.jsonl", wh)
    assert wh.execute("SELECT id, log_date::VARCHAR FROM task_logs ORDER BY id").fetchall() == [
        ("r1", "2026-11-30"), ("r2", "2026-12-01")]
    write_jsonl(tmp_path / "b.jsonl", [rec(3)])
    ingest(tmp_path / "b.jsonl", wh, log_date="2026-12-05")
    assert wh.execute("SELECT log_date::VARCHAR FROM task_logs WHERE id = 'r3'").fetchall() == [("2026-12-05",)]


def test_byte_order_mark_and_crlf_are_tolerated(rec, tmp_path, wh):
    (tmp_path / "bom.jsonl").write_bytes(b"\xef\xbb\xbf" + json.dumps(rec(1)).encode() + b"\r\n" + json.dumps(rec(2)).encode() + b"\r\n")
    r = ingest(tmp_path / "bom.jsonl", wh)
    assert (r.lines_read, r.ingested, r.quarantined) == (2, 2, 0)


def test_chunk_boundaries_keep_line_numbers(rec, write_jsonl, tmp_path, wh):
    lines = [rec(i) for i in range(40)]
    lines[17] = rec(17, timestamp=12)
    write_jsonl(tmp_path / "c.jsonl", lines)
    r = ingest(tmp_path / "c.jsonl", wh, options=IngestOptions(jsonl_chunk_bytes=1500))
    assert (r.ingested, r.quarantined) == (39, 1)
    assert wh.execute("SELECT reason FROM quarantine").fetchall()[0][0].startswith("line 18: field 'timestamp'")


def _parquet(path, rows: list[dict], schema: pa.Schema | None = None) -> None:
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)


def test_parquet_good_bad_and_duplicates(rec, tmp_path, wh):
    rows = [
        {**rec(i), "messages": json.dumps(rec(i)["messages"]), "outcome": json.dumps(rec(i)["outcome"]),
         "reference": json.dumps(rec(i)["reference"]), "tenant": "acme"}
        for i in range(6)
    ]
    rows[1]["timestamp"] = "not a time"
    rows[2]["task_id"] = None
    rows[3]["messages"] = '[{"role": "user", "content": "trunc'
    rows[4]["id"] = "r0"  # duplicate of row 1 within the batch
    path = tmp_path / "logs.parquet"
    _parquet(path, rows)
    r = ingest(path, wh, options=IngestOptions(parquet_batch_rows=2))  # duplicates across batches too
    assert (r.lines_read, r.ingested, r.quarantined, r.duplicates) == (6, 2, 3, 1)
    got = dict(wh.execute("SELECT source_line, reason FROM quarantine").fetchall())
    assert got[2].startswith("row 2: field 'timestamp': 'not a time' is not an ISO-8601")
    assert got[3] == "row 3: required field 'task_id' is null"
    assert got[4].startswith("row 4: field 'messages' is not valid JSON")
    assert json.loads(wh.execute("SELECT extra FROM task_logs WHERE id = 'r0'").fetchall()[0][0]) == {"tenant": "acme"}


def test_parquet_nested_columns_and_wrong_column_type(rec, tmp_path, wh):
    nested = [rec(i) for i in range(3)]
    for r in nested:
        r["timestamp"] = None
    schema = pa.schema([("id", pa.string()), ("timestamp", pa.timestamp("us", tz="UTC")), ("task_id", pa.int64()),
                        ("domain", pa.string()), ("model", pa.string()),
                        ("messages", pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))),
                        ("outcome", pa.struct([("status", pa.string()), ("passed", pa.bool_())]))])
    rows = [{**r, "timestamp": pa.scalar(1764583200000000, pa.timestamp("us", tz="UTC")).as_py(), "task_id": i}
            for i, r in enumerate(nested)]
    _parquet(tmp_path / "n.parquet", [{k: r[k] for k in schema.names} for r in rows], schema)
    r = ingest(tmp_path / "n.parquet", wh)
    assert r.quarantined == 3 and r.by_reason == {"wrong_type": 3}
    assert "field 'task_id': expected string, got int64" in wh.execute("SELECT reason FROM quarantine").fetchall()[0][0]
    schema2 = schema.set(2, pa.field("task_id", pa.string()))
    _parquet(tmp_path / "n2.parquet", [{**{k: r[k] for k in schema.names}, "task_id": f"t{i}"} for i, r in enumerate(rows)], schema2)
    r2 = ingest(tmp_path / "n2.parquet", wh)
    assert r2.ingested == 3
    msgs, outcome = wh.execute("SELECT messages, outcome FROM task_logs WHERE id = 'r1'").fetchall()[0]
    assert json.loads(msgs) == [{"role": "user", "content": "What is 1+1?"}]
    assert json.loads(outcome) == {"status": "success", "passed": True}


def test_folder_with_mixed_formats_and_file_uri(rec, write_jsonl, tmp_path, wh):
    d = tmp_path / "day"
    (d / "sub").mkdir(parents=True)
    write_jsonl(d / "a.jsonl", [rec(1), rec(2)])
    with gzip.open(d / "sub" / "b.jsonl.gz", "wt") as f:
        f.write(json.dumps(rec(3)) + "\n")
    _parquet(d / "c.parquet", [{**rec(4), "messages": "[]", "outcome": "{}", "reference": None}])
    (d / "notes.txt").write_text("not a log")
    assert [s.format for s in list_sources(f"file://{d}")] == ["jsonl", "parquet", "jsonl"]
    r = ingest(f"file://{d}", wh)
    assert (r.files, r.ingested, r.quarantined) == (3, 4, 0)
    with pytest.raises(FileNotFoundError):
        ingest(tmp_path / "nope", wh)


def test_corrupt_parquet_is_quarantined_not_fatal(rec, write_jsonl, tmp_path, wh):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "broken.parquet").write_bytes(b"PAR1 this is not parquet")
    write_jsonl(tmp_path / "d" / "ok.jsonl", [rec(1)])
    r = ingest(tmp_path / "d", wh)
    assert (r.ingested, r.quarantined, r.lines_read) == (1, 1, 2)
    assert "not a readable Parquet file" in wh.execute("SELECT reason FROM quarantine").fetchall()[0][0]


def test_a_failed_run_leaves_nothing_behind(rec, write_jsonl, tmp_path, wh):
    write_jsonl(tmp_path / "a.jsonl", [rec(i) for i in range(30)] + ["{bad"])

    def boom(n: int) -> None:
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        ingest(tmp_path / "a.jsonl", wh, options=IngestOptions(jsonl_chunk_bytes=2000), progress=boom)
    assert [p.name for p in task_logs_dir(wh).rglob("*.parquet")] == ["_empty.parquet"]
    assert [wh.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0] for t in ("task_log_ids", "quarantine")] == [0, 0]
    r = ingest(tmp_path / "a.jsonl", wh)
    assert (r.ingested, r.quarantined, r.duplicates) == (30, 1, 0)


def test_parquet_off_local_disk_matches_the_duckdb_read_path(tmp_path):
    """Local Parquet is read by DuckDB itself; any other filesystem goes through pyarrow batches.
    Both paths must give the same rows, quarantine and redactions (bad rows, duplicates, secrets)."""
    import uuid
    from concurrent.futures import ThreadPoolExecutor

    import pyarrow.fs as pafs

    from flywheel.logs.load import Loader
    from flywheel.logs.synthetic import synthetic_table

    t = synthetic_table(0, 3000, 3)
    bad = t.slice(0, 5).set_column(5, "messages", pa.array(["{not json"] * 5))
    pq.write_table(pa.concat_tables([t, bad, t.slice(100, 7)]), tmp_path / "x.parquet", row_group_size=700)
    seen = {}
    for mode, fs, path in [("local", pafs.LocalFileSystem(), str(tmp_path / "x.parquet")),
                           ("remote", pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem()), "x.parquet")]:
        con = connect(tmp_path / f"{mode}.duckdb")
        rep = IngestReport(run_id=uuid.uuid4().hex)
        opts = IngestOptions(parquet_batch_rows=1000)
        with ThreadPoolExecutor(opts.workers) as pool:
            loader = Loader(con, opts, None, rep, None, pool)
            loader.load_parquet(SourceFile(fs, path, "x.parquet", "parquet"))
            loader.finish()
        seen[mode] = (rep.lines_read, rep.ingested, rep.quarantined, rep.duplicates, rep.redactions_by_kind,
                      con.sql("SELECT * EXCLUDE (ingested_at) FROM task_logs ORDER BY source_line").fetchall(),
                      con.sql("SELECT source_line, reason FROM quarantine ORDER BY 1").fetchall())
        con.close()
    assert seen["local"][:4] == (3012, 3000, 5, 7)
    assert seen["local"][4] and sum(seen["local"][4].values()) == sum(r[-1] for r in seen["local"][5])
    assert seen["local"] == seen["remote"]
    assert not any("@example.com" in r[5] or "sk-abc" in r[5] for r in seen["local"][5])


def test_parallel_prefilter_and_part_files_match_one_thread(tmp_path):
    """Batches big enough to be split (prefilter slices, several part files per batch) give exactly
    the rows, redactions and files' union that one thread gives; every part file is complete."""
    from flywheel.logs.synthetic import synthetic_table

    pq.write_table(synthetic_table(0, 140_000, 7), tmp_path / "big.parquet", row_group_size=50_000)
    seen = {}
    for workers in (1, 3):
        con = connect(tmp_path / f"w{workers}" / "warehouse.duckdb")
        opts = IngestOptions(parquet_batch_rows=140_000, workers=workers)
        rep = ingest(tmp_path / "big.parquet", con, options=opts)
        files = [p for p in task_logs_dir(con).rglob("part-*.parquet")]
        assert not list(task_logs_dir(con).rglob(".*.tmp"))
        seen[workers] = (rep.ingested, rep.redactions_by_kind, len(files),
                         con.sql("SELECT md5(string_agg(id || messages || outcome || redactions, ',' ORDER BY id)) "
                                 "FROM task_logs").fetchall())
        con.close()
    assert seen[1][0] == seen[3][0] == 140_000 and seen[1][1] and seen[1][1] == seen[3][1]
    assert (seen[1][2], seen[3][2]) == (1, 2)  # 140k rows: one file, or two slices of >= 64k rows
    assert seen[1][3] == seen[3][3]


def test_a_key_stored_by_one_batch_is_a_duplicate_in_the_next(tmp_path, wh):
    """Batch k+1 is anti-joined against the keys batch k just stored: a key of batch k that repeats in
    batch k+1 (or k+2) is a duplicate, counted once, never stored twice."""
    from flywheel.logs.synthetic import synthetic_table

    t = synthetic_table(0, 1000, 5)
    pq.write_table(pa.concat_tables([t, t.slice(990, 10), t.slice(0, 1000), t.slice(3, 2)]),
                   tmp_path / "rep.parquet", row_group_size=300)
    rep = ingest(tmp_path / "rep.parquet", wh, options=IngestOptions(parquet_batch_rows=1000))
    assert (rep.lines_read, rep.ingested, rep.duplicates, rep.quarantined) == (2012, 1000, 1012, 0)
    assert wh.sql("SELECT count(*), count(DISTINCT id) FROM task_logs").fetchall() == [(1000, 1000)]
    assert wh.sql("SELECT max(source_line) FROM task_logs").fetchall() == [(1000,)]


def test_rows_are_stored_in_file_order_and_the_session_setting_is_restored(tmp_path, wh):
    """The warehouse session lets DuckDB reorder results (`preserve_insertion_order = false`, for memory on
    bulk loads); ingest's batch queries keep the file's order while it runs, so two threads scanning a
    batch's row groups never interleave rows: the same file gives the same part files, and a batch's days
    stay in runs. The session's own setting is back afterwards."""
    from flywheel.logs.synthetic import synthetic_table

    pq.write_table(synthetic_table(0, 200_000, 3), tmp_path / "big.parquet", row_group_size=10_000)
    wh.execute("SET threads = 2")
    rep = ingest(tmp_path / "big.parquet", wh, options=IngestOptions(parquet_batch_rows=100_000))
    assert rep.ingested == 200_000
    for f in task_logs_dir(wh).rglob("part-*.parquet"):
        lines = pq.read_table(f, columns=["source_line"])["source_line"].to_numpy()
        assert (lines[1:] > lines[:-1]).all(), f"{f.name}: rows out of file order"
    assert wh.execute("SELECT current_setting('preserve_insertion_order')").fetchall() == [(False,)]
