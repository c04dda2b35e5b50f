"""The second half of an ingest batch, overlapped with the first half of the next one.

Once a batch is validated, keyed and de-duplicated (`load.Loader`, DuckDB on the caller's thread), what
is left needs no DuckDB: the redaction prefilter and redaction of its text columns, building the
`task_logs` rows and encoding their Parquet files. That runs on a background thread (its Arrow kernels
on the ingest call's pool) while DuckDB validates the next batch, so the two use the cores together.
At most one batch is in flight; `settle` then commits it in order -- its files renamed into view, then
its keys written to `task_log_ids`, then its counts added to the report -- always before the next
batch looks up stored keys, so de-duplication sees every earlier batch as before.
"""

from __future__ import annotations

import datetime as dt
import time
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flywheel.logs.arrow_ops import prefilter_hits, redact_rows
from flywheel.logs.options import IngestReport
from flywheel.logs.validate_sql import OUT_COLS
from flywheel.logs.writer import Parts, PartWriter


@dataclass
class _Done:
    """A batch ready to commit: its encoded files, its keys and what redaction found."""

    parts: Parts
    keys: pa.Table  # id, log_date, h
    rows: int
    flagged: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0


class BatchStage:
    """Redacts and encodes one batch at a time in the background (`submit`), commits it on `settle`."""

    def __init__(self, con: duckdb.DuckDBPyConnection, out: PartWriter, report: IngestReport, pool: Executor,
                 workers: int, redact: bool, log_date: dt.date | None, now: dt.datetime):
        self.con, self.out, self.report, self.pool, self.workers = con, out, report, pool, workers
        self.redact, self.log_date, self.now = redact, log_date, now
        self._thread: ThreadPoolExecutor | None = None
        self._pending: Future[_Done] | None = None

    def submit(self, new: pa.Table, source_file: str) -> None:
        """Start on `new` (OUT_COLS, `line_no`, `redactions`, `h`), the previous batch settled first."""
        self.settle()
        if self._thread is None:
            self._thread = ThreadPoolExecutor(1, thread_name_prefix="flywheel-ingest-stage")
        self._pending = self._thread.submit(self._prepare, new, source_file)

    def settle(self) -> None:
        """Commit the batch in flight, if any (its error, if it failed, is raised here)."""
        fut, self._pending = self._pending, None
        if fut is None:
            return
        done = fut.result()
        try:
            self.out.commit(done.parts)
        except BaseException:
            self.out.drop(done.parts)
            raise
        self.con.register("_n", done.keys)
        try:
            self.con.execute("INSERT INTO task_log_ids SELECT id, log_date, ?, h FROM _n", [self.report.run_id])
        finally:
            self.con.unregister("_n")
        r = self.report
        r.ingested += done.rows
        r.prefilter_hits += done.flagged
        r.redact_seconds += done.seconds
        for k, n in done.by_kind.items():
            r.redactions_by_kind[k] = r.redactions_by_kind.get(k, 0) + n
            r.redactions += n

    def drop(self) -> None:
        """Forget the batch in flight (the run or file is failing): wait for it, delete its files."""
        fut, self._pending = self._pending, None
        if fut is not None and fut.exception() is None:
            self.out.drop(fut.result().parts)

    def close(self) -> None:
        self.drop()
        if self._thread is not None:
            self._thread.shutdown()
            self._thread = None

    # -- on the background thread: Arrow only, never the DuckDB connection --------------------------
    def _prepare(self, new: pa.Table, source_file: str) -> _Done:
        n = len(new)
        flagged, by_kind, secs = 0, {}, 0.0
        if self.redact:
            t0 = time.perf_counter()
            hits = prefilter_hits({c: new[c] for c in OUT_COLS}, n, self.pool, self.workers)
            mask = np.logical_or.reduce(list(hits.values()))
            flagged = int(mask.sum())
            if flagged:
                new, by_kind = redact_rows(new, hits)
            secs = time.perf_counter() - t0
        out = self._rows(new, source_file)
        keys = pa.table({"id": out["id"], "log_date": out["log_date"], "h": new["h"]})
        return _Done(self.out.encode(out), keys, n, flagged, by_kind, secs)

    def _rows(self, new: pa.Table, source_file: str) -> pa.Table:
        """The batch as `task_logs` rows."""
        n = len(new)
        if self.log_date:
            day = pa.array(np.full(n, np.datetime64(self.log_date.isoformat(), "D")), pa.date32())
        else:
            day = pc.cast(new["timestamp"], pa.date32())
        name = pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array([source_file])).cast(pa.string())
        at = pa.array(np.full(n, np.datetime64(self.now, "us")), pa.timestamp("us"))
        return pa.table({
            **{c: new[c] for c in OUT_COLS},
            "log_date": day, "source_file": name, "source_line": new["line_no"], "ingested_at": at,
            "redactions": new["redactions"],
        })
