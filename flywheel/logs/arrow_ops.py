"""The Arrow work of a batch: the redaction prefilter in parallel threads, and redaction of the rows it
flags spliced back into the batch's string columns without copying the rest row by row.

The threads come from the caller's pool (one per ingest call): Arrow's kernels release the GIL, so
they use the cores DuckDB leaves idle between its queries.
"""

from __future__ import annotations

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


def prefilter_hits(cols: dict[str, pa.ChunkedArray | pa.Array], n: int, pool: Executor, workers: int) -> pa.Array:
    """True where any text column may hold something to redact (the cheap RE2 necessary condition of
    `redact.prefilter_regex`), computed over row slices of every column in `workers` threads of `pool`."""
    tasks = [(c, off, ln) for c in TEXT_COLS for off, ln in pieces(n, workers)]
    outs = list(pool.map(lambda t: pc.match_substring_regex(cols[t[0]].slice(t[1], t[2]), PREFILTER[t[0]]),
                            tasks))
    by_col: dict[str, list] = {}
    for (c, _, _), m in zip(tasks, outs, strict=True):
        by_col.setdefault(c, []).extend(m.chunks if isinstance(m, pa.ChunkedArray) else [m])
    hit = None
    for chunks in by_col.values():
        col = pa.chunked_array(chunks, pa.bool_()).combine_chunks()
        hit = col if hit is None else pc.or_kleene(hit, col)
    return pc.fill_null(hit, False)


def _redact_sql() -> str:
    """Redaction of the few rows that passed the prefilter (table `_r`): texts replaced, counts per
    kind, originals and a JSON validity flag (the shape `_finish_redaction` expects)."""
    reds = ", ".join(f"{R.sql_redact(c)} AS {c}" for c in TEXT_COLS)
    counts = ", ".join(
        f"{' + '.join(R.sql_count(f'coalesce({c}, {chr(39)}{chr(39)})', k, c) for c in TEXT_COLS)} AS r_{k}"
        for k in R.KINDS
    )
    origs = ", ".join(f"{c} AS o_{c}" for c in TEXT_COLS)
    ok = " AND ".join(f"coalesce(json_valid({c}) AND NOT {R.sql_route(f'o_{c}', c)}, true)" for c in TEXT_COLS)
    return (f"SELECT i, true AS hit, {ok} AS red_ok, * EXCLUDE (i, hit) FROM "
            f"(SELECT i, true AS hit, {reds}, {counts}, {origs} FROM _r) x")


def redact_rows(con: duckdb.DuckDBPyConnection, new: pa.Table, hit: pa.Array) -> tuple[pa.Table, dict[str, int]]:
    """Redact the rows flagged by the prefilter (in DuckDB; JSON-unsafe ones in Python) and
    splice the results back in place; the rest of the batch is not copied row by row.
    Returns the batch (its `redactions` column filled) and the redactions made, per kind."""
    hit = hit.combine_chunks() if isinstance(hit, pa.ChunkedArray) else hit
    pos = np.flatnonzero(hit.to_numpy(zero_copy_only=False))
    rows = pa.table({"i": pos, **{c: _take(new[c], pos) for c in TEXT_COLS}})
    done, counts = _finish_redaction(query(con, _redact_sql(), _r=rows))
    done = done.sort_by("i")
    red = new["redactions"].to_numpy().astype(np.int32)  # a copy: it may already count key redactions
    red[pos] += done["redactions"].to_numpy()
    cols = {c: new[c] for c in new.column_names}
    for c in TEXT_COLS:  # splice only the values redaction changed (most hits touch one column)
        changed = pc.fill_null(pc.not_equal(rows[c], done[c].combine_chunks().cast(pa.string())), False)
        ch = np.flatnonzero(changed.to_numpy(zero_copy_only=False))
        if len(ch):
            cols[c] = _splice(new[c], pos[ch], done[c].combine_chunks().take(pa.array(ch)))
    cols["redactions"] = pa.array(red)
    return pa.table(cols), counts


def _finish_redaction(new: pa.Table) -> tuple[pa.Table, dict[str, int]]:
    """Count what SQL redacted; redo in Python the rare rows where a replacement on JSON text cut
    through an escape (e.g. the `n` of `\\n` taken as part of an e-mail) and broke the JSON, and the
    rows `redact.sql_route` sends there (escapes that may hide a finding, checked kinds)."""
    rows = pc.any(new["hit"]).as_py()
    bad = pc.invert(new["red_ok"])
    broken = np.flatnonzero(bad.to_numpy(zero_copy_only=False)).tolist() if pc.any(bad).as_py() else []
    if broken:
        cols = {c: new[c].to_pylist() for c in TEXT_COLS}
        counts = {k: new[f"r_{k}"].to_pylist() for k in R.KINDS}
        for i in broken:
            for k in R.KINDS:
                counts[k][i] = 0
            for c in TEXT_COLS:
                orig = new[f"o_{c}"][i].as_py()
                red, cnt = R.redact_json_text(orig, c)
                cols[c][i] = red if cnt else orig  # nothing found: the text stays as it was written
                for k, v in cnt.items():
                    counts[k][i] += v
        for name, vals in [*cols.items(), *((f"r_{k}", v) for k, v in counts.items())]:
            new = new.set_column(new.schema.get_field_index(name), name, pa.array(vals, new.schema.field(name).type))
    total = None
    by_kind: dict[str, int] = {}
    for k in R.KINDS:
        col = pc.cast(new[f"r_{k}"], pa.int64())
        n = int(pc.sum(col).as_py() or 0) if rows else 0
        if n:
            by_kind[k] = n
        total = col if total is None else pc.add(total, col)
    return new.append_column("redactions", pc.cast(total, pa.int32())), by_kind


def redact_keys(con: duckdb.DuckDBPyConnection, cand: pa.Table) -> tuple[pa.Table, dict[int, dict[str, int]]]:
    """`cand` with its plain key fields (`redact.KEY_COLUMNS`) redacted and `h` (the hash of `id`)
    recomputed where `id` changed -- done before stored keys are looked up, so dedupe and re-ingest
    see the same redacted ids. Returns the batch and the redactions per kind of each changed row,
    by `line_no`."""
    cols = [c for c in R.KEY_COLUMNS if c in cand.column_names]
    hit = None
    for c in cols:
        m = pc.fill_null(pc.match_substring_regex(cand[c], KEY_PREFILTER), False)
        hit = m if hit is None else pc.or_(hit, m)
    if hit is None or not pc.any(hit).as_py():
        return cand, {}
    pos = np.flatnonzero(hit.to_numpy(zero_copy_only=False) if isinstance(hit, pa.Array)
                         else hit.combine_chunks().to_numpy(zero_copy_only=False))
    line_nos = cand["line_no"].take(pa.array(pos)).to_pylist()
    found: dict[int, dict[str, int]] = {}
    for c in cols:  # only the flagged rows become Python strings
        mask, repl = np.zeros(len(cand), bool), []
        for i, ln, v in zip(pos.tolist(), line_nos, cand[c].take(pa.array(pos)).to_pylist(), strict=True):
            new, counts = R.redact_key(v, c)
            if counts:
                mask[i] = True
                repl.append(new)
                acc = found.setdefault(ln, {})
                for k, n in counts.items():
                    acc[k] = acc.get(k, 0) + n
        if repl:
            typ = cand.schema.field(c).type
            col = pc.replace_with_mask(cand[c].combine_chunks(), pa.array(mask), pa.array(repl, typ))
            cand = cand.set_column(cand.schema.get_field_index(c), c, col)
    if found and "h" in cand.column_names:
        h = query(con, "SELECT hash(id) AS h FROM _k", _k=cand.select(["id"]))["h"]
        cand = cand.set_column(cand.schema.get_field_index("h"), "h", h.cast(cand.schema.field("h").type))
    return cand, found
