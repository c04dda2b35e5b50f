"""The Arrow work of a batch: the redaction prefilter in parallel threads, and redaction of the rows it
flags spliced back into the batch's string columns without copying the rest row by row.

The threads come from the caller's pool (one per ingest call): Arrow's kernels release the GIL, so
they use the cores DuckDB leaves idle between its queries.
"""

from __future__ import annotations

import json
from concurrent.futures import Executor

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flywheel.logs import redact as R

SCAN_CHUNK = 32_768
"""Rows per Arrow record batch handed to DuckDB (its unit of parallel scanning)."""
TEXT_COLS = ("messages", "outcome", "reference", "extra")
"""The JSON text columns: the ones redaction reads and rewrites."""
PREFILTER = {c: R.prefilter_regex(c) for c in TEXT_COLS}
KEY_PREFILTER = R.prefilter_regex("id") + r"|\\"


def query(con: duckdb.DuckDBPyConnection, sql: str, **tables: pa.Table) -> pa.Table:
    """Run `sql` on `con` with the Arrow `tables` registered under their keyword names."""
    for name, t in tables.items():
        con.register(name, t)
    try:
        return con.sql(sql).to_arrow_table()
    finally:
        for name in tables:
            con.unregister(name)


def _take(col: pa.ChunkedArray | pa.Array, pos: np.ndarray) -> pa.Array:
    """col[pos] chunk by chunk (pyarrow's take on a chunked array would first copy it whole)."""
    chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
    out, start = [], 0
    for ch in chunks:
        lo, hi = np.searchsorted(pos, [start, start + len(ch)])
        if hi > lo:
            out.append(ch.take(pa.array(pos[lo:hi] - start)).cast(pa.string()))
        start += len(ch)
    return pa.concat_arrays(out) if out else pa.array([], pa.string())


def _splice_chunk(arr: pa.Array, pos: np.ndarray, vals: pa.Array) -> pa.StringArray:
    """`arr` with the strings at sorted positions `pos` replaced by `vals` (nulls stay null), built
    from buffers: one memcpy of the data, no per-row work for the rows left alone."""
    arr = arr.cast(pa.string())
    vals = vals.cast(pa.string())
    n = len(arr)
    offs = np.frombuffer(arr.buffers()[1], np.int32, count=n + 1, offset=arr.offset * 4).astype(np.int64)
    data = np.frombuffer(arr.buffers()[2], np.uint8) if arr.buffers()[2] is not None else np.empty(0, np.uint8)
    vo = np.frombuffer(vals.buffers()[1], np.int32, count=len(vals) + 1, offset=vals.offset * 4).astype(np.int64)
    vd = np.frombuffer(vals.buffers()[2], np.uint8) if vals.buffers()[2] is not None else np.empty(0, np.uint8)
    lengths = np.diff(offs)
    lengths[pos] = np.diff(vo)
    new_offs = np.zeros(n + 1, np.int64)
    np.cumsum(lengths, out=new_offs[1:])
    pieces, cur = [], offs[0]
    for k, p in enumerate(pos.tolist()):
        pieces.append(data[cur:offs[p]])
        pieces.append(vd[vo[k]:vo[k + 1]])
        cur = offs[p + 1]
    pieces.append(data[cur:offs[n]])
    body = np.concatenate(pieces)
    validity = None
    if arr.null_count:
        validity = pc.is_valid(arr).buffers()[1]
    typ, otype = (pa.string(), np.int32) if new_offs[-1] < 2**31 else (pa.large_string(), np.int64)
    return pa.Array.from_buffers(typ, n, [validity, pa.py_buffer(new_offs.astype(otype)), pa.py_buffer(body)])


def _splice(col: pa.ChunkedArray | pa.Array, pos: np.ndarray, vals: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray:
    """Chunk-wise `_splice_chunk` of a (chunked) string column; chunks without a hit are kept as they are."""
    chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
    vals = vals.combine_chunks() if isinstance(vals, pa.ChunkedArray) else vals
    out, start = [], 0
    for ch in chunks:
        lo, hi = np.searchsorted(pos, [start, start + len(ch)])
        out.append(_splice_chunk(ch, pos[lo:hi] - start, vals.slice(lo, hi - lo)) if hi > lo else ch.cast(pa.string()))
        start += len(ch)
    return pa.chunked_array(out, pa.string()) if all(c.type == pa.string() for c in out) else \
        pa.chunked_array([c.cast(pa.large_string()) for c in out])


def pieces(n: int, parts: int, min_rows: int = 8192) -> list[tuple[int, int]]:
    """(offset, length) of `parts` near-equal slices of n rows (fewer, each >= min_rows, when n is small)."""
    parts = max(1, min(parts, n // min_rows or 1))
    bounds = np.linspace(0, n, parts + 1).astype(int)
    return [(int(a), int(b - a)) for a, b in zip(bounds[:-1], bounds[1:], strict=True) if b > a]


def prefilter_hits(cols: dict[str, pa.ChunkedArray | pa.Array], n: int, pool: Executor,
                   workers: int) -> dict[str, np.ndarray]:
    """Per text column, True where it may hold something to redact (the cheap RE2 necessary condition
    of `redact.prefilter_regex`), computed over row slices of every column in `workers` threads of `pool`."""
    tasks = [(c, off, ln) for c in TEXT_COLS for off, ln in pieces(n, workers)]
    outs = list(pool.map(lambda t: _prefilter(cols[t[0]].slice(t[1], t[2]), t[0]), tasks))
    by_col: dict[str, list] = {c: [] for c in TEXT_COLS}
    for (c, _, _), m in zip(tasks, outs, strict=True):
        by_col[c].extend(m.chunks if isinstance(m, pa.ChunkedArray) else [m])
    return {c: _mask(pa.chunked_array(ch, pa.bool_())) for c, ch in by_col.items()}


PER_DISTINCT = ("reference",)
"""Columns whose values repeat by design (one reference per task, repeated by every attempt at it): the
prefilter reads each distinct value once when a slice holds at most half as many as rows."""


def _prefilter(col: pa.ChunkedArray | pa.Array, column: str) -> pa.ChunkedArray | pa.Array:
    """`PREFILTER[column]` over `col` (null: no match)."""
    if column in PER_DISTINCT and len(col) >= 1024:
        distinct = pc.unique(col)
        if 2 * len(distinct) <= len(col):
            flagged = distinct.filter(pc.fill_null(pc.match_substring_regex(distinct, PREFILTER[column]), False))
            if not len(flagged):
                return pa.array(np.zeros(len(col), bool))
            return pc.is_in(col, value_set=flagged)
    return pc.match_substring_regex(col, PREFILTER[column])


def _mask(m: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """A boolean Arrow result as a numpy mask, null = False."""
    m = pc.fill_null(m, False)
    return (m.combine_chunks() if isinstance(m, pa.ChunkedArray) else m).to_numpy(zero_copy_only=False)


def redact_cells(vals: pa.Array, column: str) -> tuple[pa.Array, dict[str, np.ndarray], np.ndarray]:
    """The fast path over the JSON text cells of `column` that the prefilter flagged: each regex-only
    pattern, in order, replaced (RE2) in the cells where its own prefilter matches -- so the work follows
    the candidates found, not kinds x cells. Returns the texts, the findings per kind per cell (counted
    as they are replaced, so a JWT inside a bearer header counts once), and the cells whose redaction
    must be redone in Python (`redact.ROUTE_TO_PYTHON`; a changed cell holding `\\`; `@` beside a
    `\\uXXXX` escape; a result that is not JSON)."""
    vals = vals.cast(pa.string())
    out, n = vals, len(vals)
    counts: dict[str, np.ndarray] = {}
    for p in R.patterns_for(column):
        if p.check:
            continue
        idx = np.flatnonzero(_mask(pc.match_substring_regex(vals, p.prefilter or p.regex)))
        if not len(idx):
            continue
        cnt = pc.count_substring_regex(out.take(pa.array(idx)), p.regex).to_numpy(zero_copy_only=False)
        idx, cnt = idx[cnt > 0], cnt[cnt > 0]
        if not len(idx):
            continue
        counts.setdefault(p.kind, np.zeros(n, np.int64))[idx] += cnt
        where = np.zeros(n, bool)
        where[idx] = True
        out = pc.replace_with_mask(out, pa.array(where),
                                   pc.replace_substring_regex(out.take(pa.array(idx)), p.regex, p.replacement))
    changed = _mask(pc.not_equal(out, vals))
    route = _mask(pc.match_substring_regex(vals, R.ROUTE_TO_PYTHON))
    route |= _mask(pc.match_substring_regex(vals, R.ANY_ESCAPE)) & _mask(pc.match_substring_regex(vals, "@"))
    route |= changed & _mask(pc.match_substring_regex(vals, r"\\\\"))  # JSON nested in a string
    for i in np.flatnonzero(changed & ~route).tolist():  # a replacement never should break JSON; if it did
        try:
            json.loads(out[i].as_py())
        except ValueError:
            route[i] = True
    return out, counts, route


def redact_rows(new: pa.Table, hits: dict[str, np.ndarray]) -> tuple[pa.Table, dict[str, int]]:
    """Redact the cells the prefilter flagged, column by column (`redact_cells`; the ones it routes,
    in Python), and splice the changed values back in place; the rest of the batch is not copied row
    by row. Returns the batch (its `redactions` column counting them too) and the redactions per kind."""
    red = new["redactions"].to_numpy().astype(np.int32)  # a copy: it may already count key redactions
    by_kind: dict[str, int] = {}
    cols = {c: new[c] for c in new.column_names}
    for c in TEXT_COLS:
        pos = np.flatnonzero(hits[c])
        if not len(pos):
            continue
        orig = _take(new[c], pos)
        done, counts, route = redact_cells(orig, c)
        redo = np.flatnonzero(route).tolist()
        if redo:
            texts = done.to_pylist()
            for k in counts:
                counts[k][redo] = 0
            for i in redo:
                text, cnt = R.redact_json_text(orig[i].as_py(), c)
                texts[i] = text if cnt else orig[i].as_py()  # nothing found: the text stays as it was written
                for k, v in cnt.items():
                    if k not in counts:
                        counts[k] = np.zeros(len(pos), np.int64)
                    counts[k][i] += v
            done = pa.array(texts, pa.string())
        for k, v in counts.items():
            if v.sum():
                by_kind[k] = by_kind.get(k, 0) + int(v.sum())
                red[pos] += v.astype(np.int32)
        ch = np.flatnonzero(_mask(pc.not_equal(orig, done)))
        if len(ch):
            cols[c] = _splice(new[c], pos[ch], done.take(pa.array(ch)))
    cols["redactions"] = pa.array(red)
    return pa.table(cols), by_kind


UNIQUE_KEYS = ("id",)
"""Key columns distinct by design: never hashed for their distinct values (for a batch's ids, building the
hash table to find them all distinct cost ~0.4 CPU-s per 1M rows)."""


def _key_hits(col: pa.ChunkedArray, column: str) -> pa.ChunkedArray | pa.Array:
    """`KEY_PREFILTER` over a key column; a column of few distinct values (`task_id`, `domain`, `model`)
    is matched once per distinct value."""
    if col.null_count == len(col):
        return pa.array(np.zeros(len(col), bool))
    distinct = pc.unique(col) if len(col) >= 4096 and column not in UNIQUE_KEYS else None
    if distinct is None or 4 * len(distinct) > len(col):
        return pc.fill_null(pc.match_substring_regex(col, KEY_PREFILTER), False)
    flagged = distinct.filter(pc.fill_null(pc.match_substring_regex(distinct, KEY_PREFILTER), False))
    return pc.is_in(col, value_set=flagged)


def redact_keys(con: duckdb.DuckDBPyConnection, cand: pa.Table,
                pool: Executor | None = None) -> tuple[pa.Table, dict[int, dict[str, int]]]:
    """`cand` with its plain key fields (`redact.KEY_COLUMNS`) redacted and `h` (the hash of `id`)
    recomputed where `id` changed -- done before stored keys are looked up, so dedupe and re-ingest
    see the same redacted ids. Returns the batch and the redactions per kind of each changed row,
    by `line_no`. The columns are prefiltered in `pool`'s threads when given."""
    cols = [c for c in R.KEY_COLUMNS if c in cand.column_names]
    if not cols:
        return cand, {}
    masks = list(pool.map(lambda c: _key_hits(cand[c], c), cols)) if pool else [_key_hits(cand[c], c) for c in cols]
    hit = masks[0]
    for m in masks[1:]:
        hit = pc.or_(hit, m)
    if not pc.any(hit).as_py():
        return cand, {}
    pos = np.flatnonzero(hit.to_numpy(zero_copy_only=False) if isinstance(hit, pa.Array)
                         else hit.combine_chunks().to_numpy(zero_copy_only=False))
    by_row: dict[int, dict[str, int]] = {}
    for c in cols:  # only the flagged rows become Python strings
        mask, repl = np.zeros(len(cand), bool), []
        for i, v in zip(pos.tolist(), cand[c].take(pa.array(pos)).to_pylist(), strict=True):
            new, counts = R.redact_key(v, c)
            if counts:
                mask[i] = True
                repl.append(new)
                acc = by_row.setdefault(i, {})
                for k, n in counts.items():
                    acc[k] = acc.get(k, 0) + n
        if repl:
            typ = cand.schema.field(c).type
            col = pc.replace_with_mask(cand[c].combine_chunks(), pa.array(mask), pa.array(repl, typ))
            cand = cand.set_column(cand.schema.get_field_index(c), c, col)
    rows = list(by_row)
    line_nos = cand["line_no"].take(pa.array(rows, pa.int64())).to_pylist()
    ids = cand["id"].take(pa.array(rows, pa.int64())).to_pylist()  # as redacted: the row's key from here on
    found = {(ln, i): by_row[r] for r, ln, i in zip(rows, line_nos, ids, strict=True)}
    if found and "h" in cand.column_names:
        h = query(con, "SELECT hash(id) AS h FROM _k", _k=cand.select(["id"]))["h"]
        cand = cand.set_column(cand.schema.get_field_index("h"), "h", h.cast(cand.schema.field("h").type))
    return cand, found
