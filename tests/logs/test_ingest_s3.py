"""`flywheel ingest s3://...`: logs read over real HTTP from an S3-compatible server on 127.0.0.1.

The server is moto's (an S3 implementation that keeps objects in memory); pyarrow's own S3 client
talks to it exactly as to AWS, so listing, streaming reads, quarantine names and re-ingest are
the production code path end to end.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq


def test_ingest_from_s3_quarantines_dedupes_and_is_idempotent(s3, rec, tmp_path, capsys):
    from flywheel.cli import main

    lines = [json.dumps(rec(1)), json.dumps(rec(2)), '{"id": "r3", "timestamp": ', json.dumps(rec(1))]
    s3.put("logs/2026-12-01/a.jsonl", ("\n".join(lines) + "\n").encode())
    buf = pa.BufferOutputStream()
    rows = [rec(10), rec(11, domain=None)]
    pq.write_table(pa.table({k: [json.dumps(r[k]) if k in ("messages", "outcome", "reference") else r[k]
                                 for r in rows] for k in rows[0]}), buf)
    s3.put("logs/2026-12-01/b.parquet", buf.getvalue().to_pybytes())
    s3.put("logs/2026-12-02/c.jsonl", (json.dumps(rec(20)) + "\n").encode())  # another day: not read

    uri = f"s3://logs/2026-12-01/?{s3.query}"
    w = tmp_path / "w.duckdb"
    assert main(["ingest", uri, "--warehouse", str(w), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {k: out[k] for k in ("files", "lines_read", "ingested", "quarantined", "duplicates")} == {
        "files": 2, "lines_read": 6, "ingested": 3, "quarantined": 2, "duplicates": 1}

    from flywheel.warehouse import connect

    con = connect(w)
    try:
        q = con.execute("SELECT source_file, source_line, kind, field FROM quarantine ORDER BY ALL").fetchall()
        assert q == [("s3://logs/2026-12-01/a.jsonl", 3, "invalid_json", None),
                     ("s3://logs/2026-12-01/b.parquet", 2, "missing_field", "domain")]
        got = con.execute("SELECT id, source_file, source_line FROM task_logs ORDER BY id").fetchall()
        assert got == [("r1", "s3://logs/2026-12-01/a.jsonl", 1), ("r10", "s3://logs/2026-12-01/b.parquet", 1),
                       ("r2", "s3://logs/2026-12-01/a.jsonl", 2)]
    finally:
        con.close()

    assert main(["ingest", uri, "--warehouse", str(w), "--json"]) == 0  # the same files again: nothing new
    again = json.loads(capsys.readouterr().out)
    assert (again["ingested"], again["duplicates"], again["quarantined"]) == (0, 4, 2)


def test_missing_s3_prefix_is_a_clear_error(s3, tmp_path, capsys):
    from flywheel.cli import main

    assert main(["ingest", f"s3://logs/2030-01-01/?{s3.query}", "--warehouse", str(tmp_path / "w.duckdb")]) == 2
    assert "no such file or folder" in capsys.readouterr().err
