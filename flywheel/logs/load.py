"""Loading one ingest run into the warehouse: each batch validated and keyed in DuckDB, bad lines to
`quarantine` with their reason, stored keys dropped as duplicates, the rows the prefilter flags
redacted, and the rest written as Parquet part files with their keys in `task_log_ids`."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from concurrent.futures import Executor

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from flywheel.logs.arrow_ops import SCAN_CHUNK, TEXT_COLS, query, redact_keys
from flywheel.logs.json_array import Skipped
from flywheel.logs.jsonl import (
    TooExpanded,
    chunk_lines,
    is_json_document,
    json_array_batches,
    json_error,
    jsonl_chunks,
)
from flywheel.logs.large import restore_over_cap, shrink_large
from flywheel.logs.normalize import canonical_batch, drop_json_constants
from flywheel.logs.options import IngestOptions, IngestReport
from flywheel.logs.redact import raw_read_chars, redact_key, redact_raw
from flywheel.logs.sources import SourceFile
from flywheel.logs.stage import BatchStage
from flywheel.logs.validate_sql import (
    JSON_FIELDS,
    OUT_COLS,
    arrow_kind,
    check_order,
    jsonl_sql,
    lean_sql,
    parquet_reader,
    parquet_sql,
    safe_names,
    sql_literal,
)
from flywheel.logs.writer import PartWriter
from flywheel.warehouse.tables import task_logs_dir


class Loader:
    """State of one ingest call: connection, run id, report, options, output files, and the threads
    (`pool`, owned by the caller) that do a batch's Arrow work."""

    def __init__(self, con: duckdb.DuckDBPyConnection, opts: IngestOptions, log_date: dt.date | None,
                 report: IngestReport, progress: Callable[[int], None] | None, pool: Executor):
        self.con, self.opts, self.report, self.progress, self.pool = con, opts, report, progress, pool
        self.log_date = log_date
        self.log_date_sql = f"DATE '{log_date.isoformat()}'" if log_date else "NULL::DATE"
        self.now = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
        self._jsonl_sql = {u: lean_sql(jsonl_sql(opts, u), ()) for u in ("line", "record")}
        self._order = {u: check_order(opts, u) for u in ("line", "record")}
        self._orig: dict[int, str] = {}  # this batch's lines as read, where Python rewrote them
        self._names: dict[str, str] = {}  # file name -> as stored (`stored_name`)
        self._inflight: tuple[SourceFile | None, int] = (None, 0)  # the file and rows of the batch in `stage`
        self.out = PartWriter(task_logs_dir(con), report.run_id, pool, opts.workers)
        self.stage = BatchStage(con, self.out, report, pool, opts.workers, opts.redact, log_date, self.now)

    def close(self) -> None:
        """Drop a batch still in flight (after an error) and stop the background thread."""
        self.stage.close()

    def _settled(self, read: Callable[[SourceFile], None], src: SourceFile) -> None:
        """`read(src)`; on an error the batches already done are committed. Its last batch stays in flight,
        so the next file's first query overlaps its redaction and encoding (`finish` commits the last one)."""
        try:
            read(src)
        except BaseException:
            try:
                self._settle(src)
            except Exception:  # noqa: BLE001 -- the first error is the one to report
                self.stage.drop()
            raise

    def _settle(self, src: SourceFile | None) -> None:
        """Commit the batch in flight. One an earlier file left in flight that fails is charged to that
        file -- its rows become one `unreadable_file` entry, as a failing batch does within a file -- and
        `src` goes on; a batch of `src` itself that fails raises (its file is then quarantined)."""
        owner, rows = self._inflight
        self._inflight = (None, 0)
        try:
            self.stage.settle()
        except Exception as e:
            if owner is None or owner is src:
                raise
            self.report.lines_read -= rows
            self._file_error(owner, f"its last {rows:,} rows could not be stored ({type(e).__name__}: {str(e)[:300]})")

    def finish(self) -> None:
        """Commit the last batch of the run (a failure is charged to its file)."""
        self._settle(None)

    # -- readers ------------------------------------------------------------------------------
    def load_jsonl(self, src: SourceFile) -> None:
        """`_load_jsonl`, its last batch left in flight (`finish`)."""
        self._settled(self._load_jsonl, src)

    def load_parquet(self, src: SourceFile) -> None:
        """`_load_parquet`, its last batch left in flight (`finish`)."""
        self._settled(self._load_parquet, src)

    def _load_jsonl(self, src: SourceFile) -> None:
        """One JSONL file, chunk by chunk (`jsonl_chunk_bytes`), or a `.json` file holding one JSON array
        (its records numbered by their 1-based index), read as streams; an unreadable file, or the part
        of a compressed one past the decompression cap, is one quarantine row."""
        o = self.opts
        try:
            if is_json_document(src):
                try:
                    for batch, bad in json_array_batches(src, SCAN_CHUNK, o.jsonl_chunk_bytes, o.max_line_bytes,
                                                         o.max_decompression_ratio):
                        self._lines(src, batch, bad, "record")
                except TooExpanded as e:
                    self._file_error(src, str(e))
                except ValueError as e:  # where the array breaks: nothing after it can be located
                    self._file_error(src, f"not a valid JSON array after the records read: {e}")
                return
            for item in jsonl_chunks(src, o.jsonl_chunk_bytes, o.max_line_bytes, o.max_decompression_ratio):
                if isinstance(item, Skipped):  # a line too long to hold: counted, quarantined, not parsed
                    self.report.lines_read += 1
                    self._quarantine_rows([self._qrow(src, item.index, item.kind, None, item.reason,
                                                      item.head.decode("utf-8", "backslashreplace"))])
                    continue
                batch, not_utf8 = chunk_lines(*item)
                item = None  # the chunk's bytes: its lines are a copy in `batch` now
                self._lines(src, batch, not_utf8, "line")
        except TooExpanded as e:
            self._file_error(src, str(e))
        except OSError as e:  # unreadable / corrupt compressed file: one quarantined entry, keep going
            self._file_error(src, f"file could not be read: {e}")

    def _lines(self, src: SourceFile, batch: pa.Table, skipped: list[tuple[int, str, str, str]], unit: str) -> None:
        """One batch of JSON lines (or array records): normalised to the canonical record where needed,
        then validated, keyed and written; `skipped` are the (line, kind, reason, raw) read but not in it."""
        bad = [self._qrow(src, n, kind, None, reason, raw) for n, kind, reason, raw in skipped]
        read = len(batch) + len(bad)
        self.report.lines_read += read
        if len(batch):
            batch, wrong = self._not_json_constants(src, batch, unit)
            bad += wrong
        if len(batch):
            batch, wrong = self._canonical(src, batch, unit)
            bad += wrong
        if bad:
            self._quarantine_rows(bad)
        if len(batch):  # a line with a field over the cap is checked with that value replaced (`large`)
            cap = self.opts.max_field_bytes
            checked, over = shrink_large(batch, cap)
            cand = restore_over_cap(query(self.con, self._jsonl_sql[unit], _b=checked), over, self._order[unit], unit, cap)
            self._finish_batch(src, None, cand, (), 0, lines=batch)
        self._orig = {}
        if self.progress:
            self.progress(read)

    def _not_json_constants(self, src: SourceFile, batch: pa.Table, unit: str) -> tuple[pa.Table, list[dict]]:
        """`normalize.drop_json_constants`, the lines it refuses as quarantine rows."""
        batch, refused = drop_json_constants(batch, unit)
        return batch, [self._qrow(src, r.line_no, r.kind, r.field, r.reason, r.raw) for r in refused]

    def _canonical(self, src: SourceFile, batch: pa.Table, unit: str) -> tuple[pa.Table, list[dict]]:
        """`normalize.canonical_batch`: the lines that need Python rewritten as canonical records, those that
        are not records as quarantine rows; a line holding several traces counts one record read per trace."""
        out = canonical_batch(batch, self.opts.format, self.opts.max_line_bytes, unit, self.con)
        self._orig.update(out.originals)
        self.report.lines_read += out.extra_records
        return out.batch, [self._qrow(src, r.line_no, r.kind, r.field, r.reason, r.raw) for r in out.refused]

    def _load_parquet(self, src: SourceFile) -> None:
        """One Parquet file, `parquet_batch_rows` rows at a time; an unreadable file is one quarantine row."""
        try:
            pf = pq.ParquetFile(src.fs.open_input_file(src.path))
        except Exception as e:  # noqa: BLE001 -- any unreadable file is a quarantine entry, never a crash
            self._file_error(src, f"not a readable Parquet file: {e}")
            return
        schema = pf.schema_arrow
        if isinstance(src.fs, pafs.LocalFileSystem) and len(set(schema.names)) == len(schema.names) \
                and "file_row_number" not in schema.names:
            self._parquet_local(src, pf.metadata.num_rows, schema)
            return
        passthrough = tuple(c for c in TEXT_COLS if c in JSON_FIELDS and c in schema.names
                            and arrow_kind(schema.field(c).type) == "string")
        lean = lean_sql(parquet_sql(schema, self.opts), passthrough)
        done = 0
        batches = pf.iter_batches(batch_size=self.opts.parquet_batch_rows, use_threads=False)
        while True:
            try:
                rb = next(batches, None)
            except (OSError, pa.ArrowException) as e:  # corrupt page / row group: say where, keep going
                self._file_error(src, f"Parquet read failed after row {done}: {e}")
                return
            if rb is None:
                return
            n = rb.num_rows
            t = pa.Table.from_batches([rb]).append_column(
                "line_no", pa.array(np.arange(done + 1, done + 1 + n, dtype=np.int64)))
            t = pa.Table.from_batches(t.to_batches(max_chunksize=SCAN_CHUNK))  # zero-copy; lets DuckDB scan in parallel
            done += n
            self.report.lines_read += n
            renamed = t.rename_columns([*(c.strip('"') for c in safe_names(schema)), "line_no"])  # zero-copy
            keep = pa.table({c: t.column(schema.names.index(c)) for c in passthrough})
            self._finish_batch(src, keep, query(self.con, lean, _b=renamed), passthrough, done - n)
            if self.progress:
                self.progress(n)

    def _parquet_local(self, src: SourceFile, rows: int, schema: pa.Schema) -> None:
        """A local Parquet file: DuckDB reads it itself (much cheaper than decoding it with pyarrow
        and handing the batches over), one row range per batch -- row groups outside the range are
        skipped -- so memory stays flat and each batch sees the keys of the ones before."""
        step = self.opts.parquet_batch_rows
        path = sql_literal(src.path)
        for a in range(0, rows, step):
            b = min(rows, a + step)
            reader = parquet_reader(schema, path, a, b)
            sql = lean_sql(parquet_sql(schema, self.opts, reader), ())
            try:
                cand = query(self.con, sql)
            except duckdb.Error as e:  # corrupt page / row group: say where, keep going
                self._file_error(src, f"Parquet read failed after row {a}: {e}")
                return
            if len(cand) != b - a:
                raise AssertionError(f"read {len(cand)} rows of {src.name} [{a}, {b}), expected {b - a} (a bug)")
            self.report.lines_read += b - a
            self._finish_batch(src, None, cand, (), a)
            if self.progress:
                self.progress(b - a)

    def stored_name(self, src: SourceFile) -> str:
        """The name a row of `src` records in `source_file`: redacted like an id (a secret in a file or
        folder name is replaced, with a digest that keeps two names two), so re-ingest finds it again."""
        if src.name not in self._names:
            self._names[src.name] = stored_name(src.name, self.opts.redact)
        return self._names[src.name]

    def file_quarantine(self, src: SourceFile, reason: str) -> None:
        """A whole file refused (or failed mid-way): rows of it already stored stay; what was counted
        but not accounted for in the failing batch, and the rest of the file, become one
        `unreadable_file` entry counted as one record read."""
        try:
            self._settle(src)  # an earlier file's batch in flight is counted first
        except Exception:  # noqa: BLE001 -- a batch of `src` itself: its rows are part of what is refused
            self.stage.drop()
        self._orig = {}
        r = self.report
        r.lines_read = r.ingested + r.quarantined + r.duplicates
        self._file_error(src, reason)

    def _file_error(self, src: SourceFile, reason: str) -> None:
        self.report.lines_read += 1
        self._quarantine_rows([self._qrow(src, 0, "unreadable_file", None, f"{src.name}: {reason}", "")])

    # -- one batch ----------------------------------------------------------------------------
    def _finish_batch(self, src: SourceFile, t: pa.Table | None, cand: pa.Table, passthrough: tuple[str, ...],
                      base: int, lines: pa.Table | None = None) -> None:
        """One batch (Parquet, or a JSONL chunk), validated and keyed by DuckDB (`cand`): quarantine, dedupe,
        then handed to `stage` (redaction, Parquet files, keys; settled before the next batch's stored-key
        lookup). Columns in `passthrough` are taken from the Arrow batch `t`;
        a JSONL chunk passes its raw `lines`, so an invalid line's quarantine reason says where the JSON breaks."""
        bad = pc.is_valid(cand["err"])
        if pc.any(bad).as_py():
            self._quarantine_from_cand(src, cand.filter(bad), lines)
            cand = cand.filter(pc.invert(bad))
        n_clean = len(cand)
        if not n_clean:
            return
        key_found: dict[tuple[int, str], dict[str, int]] = {}
        if self.opts.redact:  # ids redacted before stored keys are looked up: re-ingest finds the same key
            t0 = time.perf_counter()
            cand, key_found = redact_keys(self.con, cand, self.pool)
            self.report.redact_seconds += time.perf_counter() - t0
        self._settle(src)  # the batch before commits its keys before this one looks them up
        cand = self._drop_stored(cand)
        if len(cand):
            h = cand["h"].to_numpy()
            hs = np.sort(h)
            if (hs[1:] == hs[:-1]).any():  # maybe the same id twice in this batch: keep its first line
                order = pc.sort_indices(cand, [("line_no", "ascending")])
                cand = cand.take(order)
                first = pa.table({"id": cand["id"], "i": np.arange(len(cand))}).group_by("id").aggregate([("i", "min")])
                cand = cand.take(np.sort(first["i_min"].to_numpy()))
        if passthrough:
            idx = pa.array(cand["line_no"].to_numpy() - (base + 1))
        cols = {c: (t[c].take(idx) if c in passthrough else cand[c]) for c in OUT_COLS}
        n = len(cand)
        red = pa.array(self._key_redactions(cand, key_found) if key_found else np.zeros(n, np.int32))
        self.report.duplicates += n_clean - n
        if n:  # redacted and encoded in the background while the next batch is validated (`stage`)
            self.stage.submit(pa.table({**cols, "line_no": cand["line_no"], "redactions": red, "h": cand["h"]}),
                              self.stored_name(src))
            self._inflight = (src, n)

    def _drop_stored(self, cand: pa.Table) -> pa.Table:
        """`cand` without the rows whose id is already in `task_log_ids` (duplicates). The join runs
        on the narrow key columns only, and on the 64-bit hash first, so it stays cheap however large
        the batch's text or the warehouse's history."""
        keys = cand.select(["h", "id"]).append_column("i", pa.array(np.arange(len(cand), dtype=np.int64)))
        stored = query(self.con, "SELECT s.i FROM _s s SEMI JOIN task_log_ids k ON s.h = k.h AND s.id = k.id",
                       _s=keys)  # by row, not line: a line holding several traces has several rows
        if not len(stored):
            return cand
        keep = np.ones(len(cand), bool)
        keep[stored["i"].to_numpy()] = False
        return cand.filter(pa.array(keep))

    def _key_redactions(self, cand: pa.Table, found: dict[tuple[int, str], dict[str, int]]) -> np.ndarray:
        """Per kept row, the redactions `redact_keys` made in its key fields (counted in the report too)."""
        red = np.zeros(len(cand), np.int32)
        for i, key in enumerate(zip(cand["line_no"].to_pylist(), cand["id"].to_pylist(), strict=True)):
            for k, v in found.get(key, {}).items():
                red[i] += v
                self.report.redactions_by_kind[k] = self.report.redactions_by_kind.get(k, 0) + v
                self.report.redactions += v
        return red

    # -- quarantine ---------------------------------------------------------------------------
    def _qrow(self, src: SourceFile, line: int, kind: str, fld: str | None, reason: str, raw: str) -> dict:
        limit = self.opts.raw_preview_chars
        if self.opts.redact:  # the reason quotes a field's start: redacted as well
            raw, reason = redact_raw(raw, limit), redact_raw(reason, len(reason) + 1)
        return {"source_file": self.stored_name(src), "source_line": line, "reason": reason, "field": fld,
                "raw": raw[:limit], "kind": kind, "log_date": None}

    def _quarantine_from_cand(self, src: SourceFile, bad: pa.Table, lines: pa.Table | None) -> None:
        rows = bad.select(["line_no", "err", "raw", "timestamp"]).to_pylist()
        full: dict[int, str] = {}
        need = [r["line_no"] for r in rows]  # whole lines: raw is redacted before it is cut
        if need and lines is not None:
            picked = pc.is_in(lines["line_no"], pa.array(need, pa.int64()))
            cut = raw_read_chars(self.opts.raw_preview_chars)
            long = pc.greater(pc.binary_length(lines["line"]), cut)
            short = lines.filter(pc.and_(picked, pc.invert(long)))  # the common case, in one vectorized copy
            full = dict(zip(short["line_no"].to_pylist(), short["line"].to_pylist(), strict=True))
            whole = {r["line_no"] for r in rows if r["err"]["k"] == "invalid_json"}  # json_error reads all of it
            for i in pc.indices_nonzero(pc.and_(picked, long)).to_pylist():  # a long line: one at a time, only
                n, line = lines["line_no"][i].as_py(), lines["line"].slice(i, 1)  # as much as `redact_raw` reads
                full[n] = (line if n in whole else pc.utf8_slice_codeunits(line, 0, cut))[0].as_py()
        out = []
        for r in rows:
            e, n = r["err"], r["line_no"]
            msg = f"{e['m'].split(' ', 1)[0]} {n}: {json_error(full[n])}" if e["k"] == "invalid_json" and n in full else e["m"]
            q = self._qrow(src, n, e["k"], e["f"], msg, self._orig.get(n) or full.get(n) or r["raw"] or "")
            q["log_date"] = r["timestamp"].date() if r["timestamp"] else None
            out.append(q)
        self._quarantine_rows(out)

    def _quarantine_rows(self, rows: list[dict]) -> None:
        for r in rows:
            self.report.by_reason[r["kind"]] = self.report.by_reason.get(r["kind"], 0) + 1
        self.report.quarantined += len(rows)
        t = pa.Table.from_pylist(rows, schema=_Q_SCHEMA)
        self.con.register("_q", t)
        try:
            self.con.execute(
                f"""INSERT INTO quarantine
                SELECT DISTINCT ON (source_file, source_line, kind)
                       source_file, source_line, coalesce({self.log_date_sql}, log_date), reason, field, raw,
                       ?::TIMESTAMP, kind, ?
                FROM _q
                WHERE NOT EXISTS (SELECT 1 FROM quarantine q WHERE q.source_file = _q.source_file
                                  AND q.source_line = _q.source_line AND q.kind = _q.kind)""",
                [self.now, self.report.run_id],
            )
        finally:
            self.con.unregister("_q")


def stored_name(name: str, redact: bool = True) -> str:
    """The `source_file` a file named `name` is recorded under (see `Loader.stored_name`)."""
    return (redact_key(name, "raw")[0] or name) if redact else name


_Q_SCHEMA = pa.schema([("source_file", pa.string()), ("source_line", pa.int64()), ("reason", pa.string()),
                       ("field", pa.string()), ("raw", pa.string()), ("kind", pa.string()), ("log_date", pa.date32())])

