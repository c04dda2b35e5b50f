"""`flywheel ingest s3://...`: logs read over real HTTP from an S3-compatible server on 127.0.0.1.

The server is moto's (an S3 implementation that keeps objects in memory); pyarrow's own S3 client
talks to it exactly as to AWS, so listing, streaming reads, quarantine names and re-ingest are
the production code path end to end.
"""

from __future__ import annotations

import json
import urllib.request

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from tests.test_ingest import rec

moto_server = pytest.importorskip("moto.server", reason="moto[server] is a dev dependency")


@pytest.fixture
def s3(monkeypatch):
    """(filesystem, URI query string) of a fresh S3 server with a `logs` bucket."""
    for k, v in {"AWS_ACCESS_KEY_ID": "flywheel-test", "AWS_SECRET_ACCESS_KEY": "flywheel-test",
                 "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}.items():
        monkeypatch.setenv(k, v)
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    # moto keeps its buckets per process, not per server: start every test from an empty store
    urllib.request.urlopen(urllib.request.Request(f"http://{host}:{port}/moto-api/reset", method="POST")).close()
    fs = pafs.S3FileSystem(endpoint_override=f"{host}:{port}", scheme="http", region="us-east-1",
                           allow_bucket_creation=True)
    fs.create_dir("logs")
    try:
        yield fs, f"endpoint_override={host}:{port}&scheme=http&region=us-east-1"
    finally:
        server.stop()


def _put(fs: pafs.S3FileSystem, key: str, data: bytes) -> None:
    with fs.open_output_stream(key) as f:
        f.write(data)


def test_ingest_from_s3_quarantines_dedupes_and_is_idempotent(s3, tmp_path, capsys):
    from flywheel.cli import main

    fs, query = s3
    lines = [json.dumps(rec(1)), json.dumps(rec(2)), '{"id": "r3", "timestamp": ', json.dumps(rec(1))]
    _put(fs, "logs/2026-12-01/a.jsonl", ("\n".join(lines) + "\n").encode())
    buf = pa.BufferOutputStream()
    rows = [rec(10), rec(11, domain=None)]
    pq.write_table(pa.table({k: [json.dumps(r[k]) if k in ("messages", "outcome", "reference") else r[k]
                                 for r in rows] for k in rows[0]}), buf)
    _put(fs, "logs/2026-12-01/b.parquet", buf.getvalue().to_pybytes())
    _put(fs, "logs/2026-12-02/c.jsonl", (json.dumps(rec(20)) + "\n").encode())  # another day: not read

    uri = f"s3://logs/2026-12-01/?{query}"
    w = tmp_path / "w.duckdb"
    assert main(["ingest", uri, "--warehouse", str(w), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {k: out[k] for k in ("files", "lines_read", "ingested", "quarantined", "duplicates")} == {
        "files": 2, "lines_read": 6, "ingested": 3, "quarantined": 2, "duplicates": 1}

    from flywheel.logs.warehouse import connect

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

    _, query = s3
    assert main(["ingest", f"s3://logs/2030-01-01/?{query}", "--warehouse", str(tmp_path / "w.duckdb")]) == 2
    assert "no such file or folder" in capsys.readouterr().err


def test_daily_asset_reads_its_partition_from_s3(s3, flywheel_home):
    import dagster as dg

    from assets.logs import raw_task_logs
    from tests.test_assets_logs import line, resources

    fs, query = s3
    _put(fs, "logs/2026-12-02/traffic.jsonl", ("\n".join(line(i) for i in range(3)) + "\n{oops\n").encode())
    res = resources(flywheel_home.home, f"s3://logs/{{date}}/?{query}")
    meta = dg.materialize([raw_task_logs], partition_key="2026-12-02", resources=res) \
        .asset_materializations_for_node("raw_task_logs")[0].metadata
    assert (meta["ingested"].value, meta["quarantined"].value) == (3, 1)
    with pytest.raises(dg.Failure, match="no raw logs for 2026-12-03"):
        dg.materialize([raw_task_logs], partition_key="2026-12-03", resources=res)
