"""The batch stage: redaction and encoding of batch k overlap validation of batch k+1, committed in order."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from flywheel.logs import writer
from flywheel.logs.ingest import ingest
from flywheel.logs.options import IngestOptions
from flywheel.logs.synthetic import synthetic_table
from flywheel.warehouse.tables import task_logs_dir


def test_a_failed_background_batch_quarantines_its_file_and_keeps_the_batches_before(tmp_path, wh, monkeypatch):
    """Encoding fails in the background on the 3rd batch of a file: the two batches before it stay
    stored, the rest of the file is one `unreadable_file` entry, no temporary file is left, the
    conservation law holds, and a later re-ingest stores the rest without storing anything twice."""
    pq.write_table(synthetic_table(0, 5000, 11), tmp_path / "a.parquet", row_group_size=1000)
    real, calls = writer.PartWriter._encode, []

    def flaky(job):
        calls.append(len(job[0]))
        if len(calls) == 3:
            raise OSError("disk full")
        return real(job)

    monkeypatch.setattr(writer.PartWriter, "_encode", staticmethod(flaky))
    opts = IngestOptions(parquet_batch_rows=1000, workers=1)
    r = ingest(tmp_path / "a.parquet", wh, options=opts, log_date="2026-12-01")  # one file per batch
    assert (r.ingested, r.duplicates, r.quarantined) == (2000, 0, 1) and r.balanced
    assert "disk full" in wh.sql("SELECT reason FROM quarantine WHERE kind = 'unreadable_file'").fetchall()[0][0]
    assert wh.sql("SELECT count(*), count(DISTINCT id), max(source_line) FROM task_logs").fetchall() == [(2000, 2000, 2000)]
    assert not list(task_logs_dir(wh).rglob(".*.tmp"))
    monkeypatch.setattr(writer.PartWriter, "_encode", staticmethod(real))
    again = ingest(tmp_path / "a.parquet", wh, options=opts, log_date="2026-12-01")
    assert (again.ingested, again.duplicates) == (3000, 2000)
    assert wh.sql("SELECT count(*), count(DISTINCT id) FROM task_logs").fetchall() == [(5000, 5000)]


def test_pipelined_batches_store_what_one_batch_stores(tmp_path):
    """Many small batches (each redacted and encoded while the next is validated) store exactly the
    rows, redactions and ids that one batch over the whole file stores."""
    from flywheel.warehouse import connect

    t = synthetic_table(0, 4000, 3)
    pq.write_table(pa.concat_tables([t, t.slice(10, 50)]), tmp_path / "x.parquet", row_group_size=500)
    seen = []
    for rows in (4050, 300):
        con = connect(tmp_path / f"b{rows}" / "w.duckdb")
        r = ingest(tmp_path / "x.parquet", con, options=IngestOptions(parquet_batch_rows=rows))
        seen.append((r.ingested, r.duplicates, r.redactions, r.redactions_by_kind, r.prefilter_hits,
                     con.sql("SELECT md5(string_agg(id || messages || outcome || coalesce(reference, '') || redactions, "
                             "',' ORDER BY id)) FROM task_logs").fetchall(),
                     con.sql("SELECT count(*) FROM task_log_ids").fetchall()))
        con.close()
    assert seen[0] == seen[1] and seen[0][0] == 4000 and seen[0][1] == 50 and seen[0][2] > 0


def test_a_file_s_last_batch_fails_while_the_next_file_is_read(tmp_path, wh, monkeypatch):
    """A file's last batch is still being encoded when the next file's first batch is validated; when it
    fails, its rows are charged to its own file (one `unreadable_file` entry naming it), the next file
    is stored whole, and the conservation law holds."""
    folder = tmp_path / "logs"
    folder.mkdir()
    pq.write_table(synthetic_table(0, 2000, 11), folder / "a.parquet", row_group_size=1000)
    pq.write_table(synthetic_table(1, 3000, 12), folder / "b.parquet", row_group_size=1000)
    real, calls = writer.PartWriter._encode, []

    def flaky(job):
        calls.append(len(job[0]))
        if len(calls) == 2:  # a.parquet's second and last batch
            raise OSError("disk full")
        return real(job)

    monkeypatch.setattr(writer.PartWriter, "_encode", staticmethod(flaky))
    opts = IngestOptions(parquet_batch_rows=1000, workers=1)
    r = ingest(folder, wh, options=opts, log_date="2026-12-01")
    assert (r.ingested, r.duplicates, r.quarantined) == (4000, 0, 1) and r.balanced
    (name, reason), = wh.sql("SELECT source_file, reason FROM quarantine WHERE kind = 'unreadable_file'").fetchall()
    assert name.endswith("/a.parquet") and "its last 1,000 rows could not be stored" in reason and "disk full" in reason
    assert wh.sql("SELECT regexp_extract(source_file, '[^/]+$'), count(*) FROM task_logs GROUP BY 1 ORDER BY 1"
                  ).fetchall() == [("a.parquet", 1000), ("b.parquet", 3000)]
    assert not list(task_logs_dir(wh).rglob(".*.tmp"))
