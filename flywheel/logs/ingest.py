"""Ingest task logs (JSONL, JSON arrays or Parquet, local or any pyarrow filesystem) into the warehouse.

The contract, every call:

    lines_read == ingested + quarantined + duplicates

- JSON records may be in the flywheel schema, OpenAI Chat Completions or ShareGPT (`options.format`,
  detected per record by default); every one is stored as the same canonical record, its messages
  checked (`formats`, `messages`). A `.json` file holding one array is read whole; its records are
  numbered by their 1-based index, which stands for the line number everywhere below.
- Input is streamed: JSONL in byte chunks (`jsonl_chunk_bytes`), Parquet in row ranges of
  `parquet_batch_rows` (local files are read by DuckDB's `read_parquet` itself; other filesystems
  through pyarrow record batches), so memory stays flat however large the logs grow.
- Validation, canonicalization and hashing run as DuckDB SQL over each whole batch, the stored-key
  lookup as a narrow join after it, the redaction prefilter as Arrow RE2 kernels in parallel
  threads, and redaction in SQL on the rows the prefilter flags (all vectorized; JSONL and Parquet
  batches share this path after validation); Python only touches the rare rows that need a precise message (invalid
  JSON, invalid UTF-8) or a JSON-safe redaction.
- A bad line never stops the file: it goes to `quarantine` with its file, 1-based line (or
  Parquet row) number, a reason a person can act on and the raw text (truncated).
- Records are keyed by `id`, or by an md5 content hash of the canonical record when `id` is
  missing; a record whose key is already in `task_logs` (from any earlier run, or earlier in
  this one) counts as a duplicate and is not inserted again. Quarantine rows are keyed by
  (file, line, kind), so re-ingesting the same files adds nothing anywhere.
- Blank lines are not records: they are skipped and not counted.

- A bad file never stops the run either: any error reading it is one `unreadable_file` entry
  (counted as one record read) and the rows already stored from it stay; links that leave the
  ingested folder are refused and each real file is read once (`guard`).

Where the parts live: `sources` (what to read), `guard` (which of it may be read), `jsonl` (JSONL chunks and lines, JSON arrays),
`formats` and `messages` (other formats and the canonical messages, in Python), `validate_sql`
(the checks, as DuckDB SQL), `arrow_ops` (prefilter and redaction of a batch), `writer` (the
Parquet part files), `load` (one run: batches, duplicates, quarantine), `warehouse` (the tables).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import duckdb

from flywheel.logs.guard import guard_sources
from flywheel.logs.load import Loader
from flywheel.logs.options import IngestOptions, IngestReport
from flywheel.logs.redact import redact_key
from flywheel.logs.sources import list_sources
from flywheel.warehouse import connect
from flywheel.warehouse.session import session_settings
from flywheel.warehouse.tables import ensure_tables


def _caller(progress: Callable[[int], None] | None) -> Callable[[int], None] | None:
    """`progress`, its exceptions marked as the caller's: they stop the run (and undo it) instead of
    quarantining the file being read."""
    if progress is None:
        return None

    def call(n: int) -> None:
        try:
            progress(n)
        except Exception as e:
            e._flywheel_caller = True  # type: ignore[attr-defined]
            raise
    return call


def ingest(
    source: str | os.PathLike[str],
    con: duckdb.DuckDBPyConnection | str | os.PathLike[str],
    *,
    log_date: dt.date | str | None = None,
    options: IngestOptions | None = None,
    progress: Callable[[int], None] | None = None,
) -> IngestReport:
    """Ingest every log file at `source` (file, folder or URI) into the warehouse `con`.

    `con` is an open DuckDB connection or a warehouse path (opened and closed here).
    `log_date` stamps every row's `log_date` (the daily partition); without it the record's UTC
    date is used. `progress(n)` is called after each batch with the lines it read.
    Batches are committed one by one (Parquet file first, then its keys); on an exception the
    run's files, keys and quarantine rows are removed again. A hard kill mid-run can leave the
    batch in flight written without its keys (a later re-ingest would then add those rows twice,
    never lose them). Raises FileNotFoundError when `source` does not exist; bad content never raises.
    """
    opts = options or IngestOptions()
    day = dt.date.fromisoformat(log_date) if isinstance(log_date, str) else log_date
    sources = list_sources(source)
    own = not isinstance(con, duckdb.DuckDBPyConnection)
    connection = connect(con) if own else con
    loader = None
    pool = ThreadPoolExecutor(opts.workers, thread_name_prefix="flywheel-ingest")  # this call's Arrow threads
    try:
        ensure_tables(connection)
        connection.execute("SET TimeZone = 'UTC'")
        where = os.fspath(source)
        report = IngestReport(run_id=uuid.uuid4().hex, source=redact_key(where, "raw")[0] if opts.redact else where,
                              files=len(sources),
                              log_date=day.isoformat() if day else None)
        t0, started = time.perf_counter(), dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
        loader = Loader(connection, opts, day, report, _caller(progress), pool)
        # Batch queries keep the file's row order: the same input gives the same files, and a batch's days
        # come in runs, written as zero-copy slices (interleaved, each day was copied out: ~4% more CPU and
        # +330 MiB peak RSS per 1M rows, measured).
        with session_settings(connection, preserve_insertion_order="true"):
            for src, refused in guard_sources(source, sources):
                if refused:
                    loader.file_quarantine(src, refused)
                    continue
                try:
                    (loader.load_parquet if src.format == "parquet" else loader.load_jsonl)(src)
                except AssertionError:
                    raise  # a bug in ingest, not in the file
                except Exception as e:  # noqa: BLE001 -- one bad file never stops the run
                    if getattr(e, "_flywheel_caller", False):
                        raise
                    loader.file_quarantine(src, f"file could not be ingested ({type(e).__name__}: {str(e)[:300]})")
            loader.finish()
        report.seconds = time.perf_counter() - t0
        if not report.balanced:
            raise AssertionError(f"ingest lost count (a bug): {report}")
        connection.execute(
            "INSERT INTO ingest_runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [report.run_id, report.source, day, started, dt.datetime.now(dt.timezone.utc).replace(tzinfo=None),
             report.seconds, report.files, report.lines_read, report.ingested, report.quarantined,
             report.duplicates, report.redactions, json.dumps(report.by_reason, sort_keys=True)],
        )
        return report
    except BaseException:
        # Undo this run: its files, its keys, its quarantine rows. (Batches commit one by one --
        # one transaction over the whole run would keep every batch's Arrow memory alive to its end.)
        if loader is not None:
            loader.close()  # a batch still in flight is dropped before the run's files are deleted
            loader.out.discard()
            for table in ("task_log_ids", "quarantine"):
                try:
                    connection.execute(f"DELETE FROM {table} WHERE run_id = ?", [loader.report.run_id])
                except duckdb.Error:
                    pass
        raise
    finally:
        if loader is not None:
            loader.close()
        pool.shutdown()
        if own:
            connection.close()
