"""Ingest task logs (JSONL or Parquet, local or any pyarrow filesystem) into the warehouse.

The contract, every call:

    lines_read == ingested + quarantined + duplicates

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
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from flywheel.logs import redact as R
from flywheel.logs.schema import REQUIRED_FIELDS, TASK_LOG_SCHEMA
from flywheel.warehouse import TASK_LOGS_ARROW, connect, ensure_tables, task_logs_dir

FIELDS: tuple[str, ...] = tuple(TASK_LOG_SCHEMA.names[:-1])  # all but `extra`
STRING_FIELDS = ("task_id", "domain", "model")
JSON_FIELDS = {"messages": "ARRAY", "outcome": "OBJECT", "reference": None}  # required JSON type
JSONL_SUFFIXES = (".jsonl", ".ndjson", ".json", ".jsonl.gz", ".ndjson.gz", ".json.gz")
PARQUET_SUFFIXES = (".parquet", ".pq")
_TEXT_COLS = ("messages", "outcome", "reference", "extra")
_SCAN_CHUNK = 32_768  # rows per Arrow record batch handed to DuckDB (its unit of parallel scanning)


@dataclass(frozen=True)
class IngestOptions:
    """Knobs of one ingest call; the defaults suit production logs."""

    max_field_bytes: int = field(default=1 << 20, metadata={"help": "a field larger than this is quarantined"})
    max_line_bytes: int = field(default=16 << 20, metadata={"help": "a line larger than this is quarantined unparsed"})
    raw_preview_chars: int = field(default=2000, metadata={"help": "raw text kept per quarantined line"})
    parquet_batch_rows: int = field(default=262_144, metadata={"help": "rows per Parquet batch"})
    jsonl_chunk_bytes: int = field(default=64 << 20, metadata={"help": "bytes per JSONL chunk (one SQL query each)"})
    redact: bool = field(default=True, metadata={"help": "replace secrets and personal data"})


@dataclass
class IngestReport:
    """What one ingest call did. `lines_read == ingested + quarantined + duplicates`."""

    lines_read: int = 0
    ingested: int = 0
    quarantined: int = 0
    duplicates: int = 0
    redactions: int = 0
    by_reason: dict[str, int] = field(default_factory=dict)
    redactions_by_kind: dict[str, int] = field(default_factory=dict)
    files: int = 0
    seconds: float = 0.0
    run_id: str = ""
    source: str = ""
    log_date: str | None = None

    @property
    def quarantine_rate(self) -> float:
        return self.quarantined / self.lines_read if self.lines_read else 0.0

    @property
    def balanced(self) -> bool:
        return self.lines_read == self.ingested + self.quarantined + self.duplicates

    def to_dict(self) -> dict:
        d = asdict(self)
        d["quarantine_rate"] = self.quarantine_rate
        return d


@dataclass(frozen=True)
class SourceFile:
    """One file to read: the filesystem, its path there, the name recorded in the warehouse."""

    fs: pafs.FileSystem
    path: str
    name: str
    format: str  # "jsonl" | "parquet"


def _format_of(path: str) -> str | None:
    p = path.lower()
    if p.endswith(PARQUET_SUFFIXES):
        return "parquet"
    if p.endswith(JSONL_SUFFIXES):
        return "jsonl"
    return None


def list_sources(source: str | os.PathLike[str]) -> list[SourceFile]:
    """Resolve a file, folder or URI (`file://`, `s3://`, `gs://`, ...) to the log files under it.

    Raises FileNotFoundError when nothing exists there; a folder is searched recursively for
    `*.jsonl[.gz]`, `*.ndjson`, `*.json` and `*.parquet`, in sorted order.
    """
    s = os.fspath(source)
    if "://" in s:
        fs, path = pafs.FileSystem.from_uri(s)
        scheme = s.split("://", 1)[0]
        prefix = "" if isinstance(fs, pafs.LocalFileSystem) else f"{scheme}://"
    else:
        fs, path, prefix = pafs.LocalFileSystem(), str(Path(s).resolve()), ""
    info = fs.get_file_info(path)
    if info.type == pafs.FileType.NotFound:
        raise FileNotFoundError(f"no such file or folder: {s}")
    if info.type == pafs.FileType.File:
        fmt = _format_of(path) or "jsonl"  # an explicitly named file is read as JSONL unless .parquet
        return [SourceFile(fs, path, prefix + path, fmt)]
    infos = fs.get_file_info(pafs.FileSelector(path, recursive=True))
    out = []
    for i in sorted(infos, key=lambda i: i.path):
        fmt = _format_of(i.path)
        if i.type == pafs.FileType.File and fmt and not Path(i.path).name.startswith((".", "_")):
            out.append(SourceFile(fs, i.path, prefix + i.path, fmt))
    return out


def _lit(s: str | None) -> str:
    return "NULL" if s is None else "'" + str(s).replace("'", "''") + "'"


# ---------------------------------------------------------------------------------------------
# Validation SQL. Each path yields rows: line_no, err (struct k/f/m or NULL), raw, and the
# normalized TASK_LOG_SCHEMA columns (id may be NULL: hashed later).
# ---------------------------------------------------------------------------------------------


def _err_case(checks: list[tuple[str, str, str | None, str]]) -> str:
    """CASE over (condition, kind, field, message-SQL), first match wins -> struct or NULL."""
    whens = " ".join(
        f"WHEN {cond} THEN struct_pack(k := '{kind}', f := {_lit(fld)}::VARCHAR, m := {msg})"
        for cond, kind, fld, msg in checks
    )
    return f"CASE {whens} END"


def _msg(prefix: str, text_sql: str) -> str:
    return f"'{prefix} ' || line_no || ': ' || {text_sql}"


def _mib(n_sql: str) -> str:
    return f"printf('%.1f MiB', {n_sql} / 1048576.0)"


def _jsonl_sql(opts: IngestOptions) -> str:
    paths = "[" + ", ".join(f"'$.{f}'" for f in FIELDS) + "]"
    known = "{" + ",".join(f'"{f}":null' for f in FIELDS) + "}"
    cap, P = opts.max_field_bytes, "line"

    def got(f: str) -> str:
        return f"'got ' || lower(t_{f}) || ' ' || left(j_{f}, 80)"

    checks: list[tuple[str, str, str | None, str]] = [
        (f"strlen(line) > {opts.max_line_bytes}", "line_too_large", None,
         _msg(P, f"'line is ' || {_mib('strlen(line)')} || ', over the {opts.max_line_bytes / 1048576:.1f} MiB line cap (max_line_bytes); split or trim the record'")),
        ("NOT ok", "invalid_json", None, _msg(P, "'not valid JSON (truncated or malformed line)'")),
        ("top <> 'OBJECT'", "not_object", None,
         _msg(P, "'expected one JSON object per line, got ' || lower(top) || ' ' || left(line, 60)")),
    ]
    # id: optional, string or integer
    checks.append(("j_id IS NOT NULL AND t_id NOT IN ('VARCHAR','BIGINT','UBIGINT','NULL')", "wrong_type", "id",
                   _msg(P, "'field ''id'': expected string or integer, ' || " + got("id"))))
    for f in REQUIRED_FIELDS:
        j = f"j_{f}"
        checks.append((f"{j} IS NULL", "missing_field", f, _msg(P, f"'missing required field ''{f}'''")))
        checks.append((f"t_{f} = 'NULL'", "missing_field", f, _msg(P, f"'required field ''{f}'' is null'")))
    for f in ("timestamp", *STRING_FIELDS):
        j = f"j_{f}"
        want = "ISO-8601 string" if f == "timestamp" else "string"
        checks.append((f"t_{f} <> 'VARCHAR'", "wrong_type", f,
                       _msg(P, f"'field ''{f}'': expected {want}, ' || " + f"'got ' || left({j}, 80)")))
        checks.append((f"s_{f} = ''", "wrong_type", f, _msg(P, f"'field ''{f}'': expected non-empty {want}, got \"\"'")))
    for f, want in JSON_FIELDS.items():
        if want:
            checks.append((f"t_{f} <> '{want}'", "wrong_type", f,
                           _msg(P, f"'field ''{f}'': expected JSON {want.lower()}, ' || " + got(f))))
    for f in FIELDS:
        checks.append((f"strlen(j_{f}) > {cap}", "field_too_large", f,
                       _msg(P, f"'field ''{f}'' is ' || {_mib(f'strlen(j_{f})')} || ', over the {cap / 1048576:.1f} MiB per-field cap (max_field_bytes)'")))
    checks.append((f"strlen(x_extra) > {cap}", "field_too_large", "extra",
                   _msg(P, f"'unknown fields total ' || {_mib('strlen(x_extra)')} || ', over the per-field cap'")))
    checks.append(("ts IS NULL", "bad_timestamp", "timestamp",
                   _msg(P, "'field ''timestamp'': ''' || left(s_timestamp, 60) || ''' is not an ISO-8601 timestamp (e.g. 2026-12-01T10:00:00Z)'")))
    cols = ", ".join(f"v[{i + 1}] AS j_{f}, t[{i + 1}] AS t_{f}, s[{i + 1}] AS s_{f}" for i, f in enumerate(FIELDS))
    return f"""
    WITH a AS (
        SELECT line_no, line, json_valid(line) AS ok FROM _b
    ), a2 AS (  -- `top` in its own step: were json_type(line) repeated in b's guards, DuckDB would hoist
                --  the shared call out of the CASEs and run it on malformed lines too (an error)
        SELECT line_no, line, ok, CASE WHEN ok THEN json_type(line) END AS top FROM a
    ), b AS (  -- one pass each for the values, their JSON types and their unquoted strings (paths in FIELDS order)
        SELECT line_no, line, ok, top,
               CASE WHEN top = 'OBJECT' THEN json_extract(line, {paths}) END AS v,
               CASE WHEN top = 'OBJECT' THEN json_type(line, {paths}) END AS t,
               CASE WHEN top = 'OBJECT' THEN json_extract_string(line, {paths}) END AS s
        FROM a2
    ), c AS (
        SELECT line_no, line, ok, top, {cols},
               CASE WHEN top = 'OBJECT' THEN nullif(json_merge_patch(line, '{known}')::VARCHAR, '{{}}') END AS x_extra
        FROM b
    ), d AS (
        SELECT *, TRY_CAST(s_timestamp AS TIMESTAMPTZ) AS ts FROM c
    ), e AS (
        SELECT *, {_err_case(checks)} AS err FROM d
    )
    SELECT line_no, err,
           CASE WHEN err IS NOT NULL THEN left(line, {opts.raw_preview_chars}) END AS raw,
           CASE WHEN t_id = 'VARCHAR' THEN nullif(s_id, '')
                WHEN t_id IN ('BIGINT', 'UBIGINT') THEN j_id::VARCHAR END AS id,
           ts AS timestamp, s_task_id AS task_id, s_domain AS domain, s_model AS model,
           j_messages::VARCHAR AS messages, j_outcome::VARCHAR AS outcome,
           CASE WHEN t_reference <> 'NULL' THEN j_reference::VARCHAR END AS reference,
           x_extra AS extra
    FROM e
    """


def _arrow_kind(t: pa.DataType) -> str:
    if pa.types.is_dictionary(t):
        return _arrow_kind(t.value_type)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "string"
    if pa.types.is_integer(t):
        return "int"
    if pa.types.is_timestamp(t) or pa.types.is_date(t):
        return "time"
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return "list"
    if pa.types.is_struct(t) or pa.types.is_map(t):
        return "object"
    return "other"


def _parquet_sql(schema: pa.Schema, opts: IngestOptions, source: str = "_b") -> str:
    """Validation SQL for one Parquet file, specialized to its column types. `source` is the
    relation with the file's columns plus `line_no` (a registered Arrow batch, or a read_parquet)."""
    cap, P = opts.max_field_bytes, "row"
    names = set(schema.names)
    q = {n: '"' + n.replace('"', '""') + '"' for n in schema.names}
    checks: list[tuple[str, str, str | None, str]] = []
    val: dict[str, str] = {}
    pre: list[str] = []
    for f in FIELDS:
        required = f in REQUIRED_FIELDS
        if f not in names:
            val[f] = "NULL::TIMESTAMPTZ" if f == "timestamp" else "NULL::VARCHAR"
            if required:
                checks.append(("TRUE", "missing_field", f, _msg(P, f"'missing required field ''{f}'' (no such column)'")))
            continue
        c, kind, tname = q[f], _arrow_kind(schema.field(f).type), str(schema.field(f).type)
        if required:
            checks.append((f"{c} IS NULL", "missing_field", f, _msg(P, f"'required field ''{f}'' is null'")))
        bad_type = (f"{c} IS NOT NULL", "wrong_type", f)
        if f == "timestamp":
            if kind == "time":
                val[f] = f"CAST({c} AS TIMESTAMPTZ)"
            elif kind == "string":
                val[f] = f"TRY_CAST({c} AS TIMESTAMPTZ)"
                checks.append((f"{c} IS NOT NULL AND {val[f]} IS NULL", "bad_timestamp", f,
                               _msg(P, f"'field ''timestamp'': ''' || left({c}, 60) || ''' is not an ISO-8601 timestamp (e.g. 2026-12-01T10:00:00Z)'")))
            else:
                val[f] = "NULL::TIMESTAMPTZ" if f == "timestamp" else "NULL::VARCHAR"
                checks.append((*bad_type, _msg(P, f"'field ''timestamp'': expected ISO-8601 string or timestamp column, got {tname} ' || left({c}::VARCHAR, 60)")))
        elif f in JSON_FIELDS:
            want = JSON_FIELDS[f]
            if kind == "string":
                val[f] = c
                jt = f"jt_{f}"  # one parse: TRY(json_type) is NULL exactly when the text is not JSON
                pre.append(f"TRY(json_type({c})) AS {jt}")
                checks.append((f"{c} IS NOT NULL AND {jt} IS NULL", "invalid_json", f,
                               _msg(P, f"'field ''{f}'' is not valid JSON: ' || left({c}, 60)")))
                if want:
                    checks.append((f"{jt} <> '{want}'", "wrong_type", f,
                                   _msg(P, f"'field ''{f}'': expected JSON {want.lower()}, got ' || lower({jt}) || ' ' || left({c}, 60)")))
            elif kind in ("list", "object") and (want is None or (want == "ARRAY") == (kind == "list")):
                val[f] = f"to_json({c})::VARCHAR"
            else:
                val[f] = "NULL::TIMESTAMPTZ" if f == "timestamp" else "NULL::VARCHAR"
                checks.append((*bad_type, _msg(P, f"'field ''{f}'': expected JSON {(want or 'value').lower()}, got {tname} column'")))
            checks.append((f"strlen({val[f]}) > {cap}", "field_too_large", f,
                           _msg(P, f"'field ''{f}'' is ' || {_mib(f'strlen({val[f]})')} || ', over the {cap / 1048576:.1f} MiB per-field cap (max_field_bytes)'")))
        else:  # id and the string fields
            if kind == "string" or (kind == "int" and f == "id"):
                val[f] = f"nullif({c}::VARCHAR, '')" if f == "id" else c
                if f != "id":
                    checks.append((f"{c} = ''", "wrong_type", f, _msg(P, f"'field ''{f}'': expected non-empty string, got \"\"'")))
                    checks.append((f"strlen({c}) > {cap}", "field_too_large", f,
                                   _msg(P, f"'field ''{f}'' is ' || {_mib(f'strlen({c})')} || ', over the per-field cap'")))
            else:
                val[f] = "NULL::TIMESTAMPTZ" if f == "timestamp" else "NULL::VARCHAR"
                checks.append((*bad_type, _msg(P, f"'field ''{f}'': expected string, got {tname} ' || left({c}::VARCHAR, 60)")))
    unknown = [n for n in schema.names if n not in FIELDS and n not in ("extra", "line_no")]
    extra_parts = []
    if "extra" in names and _arrow_kind(schema.field("extra").type) == "string":
        extra_parts.append(f"CASE WHEN json_valid({q['extra']}) THEN {q['extra']} END")
    elif "extra" in names:
        unknown.append("extra")
    if unknown:
        obj = "json_object(" + ", ".join(f"{_lit(n)}, {q[n]}" for n in unknown) + ")"
        extra_parts.append(obj)
    if not extra_parts:
        val["extra"] = "NULL::VARCHAR"
    elif len(extra_parts) == 1:
        val["extra"] = f"{extra_parts[0]}::VARCHAR"
    else:
        val["extra"] = f"json_merge_patch(coalesce({extra_parts[0]}, '{{}}'), {extra_parts[1]})::VARCHAR"
    cols = ", ".join(f"{val[f]} AS n_{f}" for f in (*FIELDS, "extra"))
    row = "struct_pack(" + ", ".join(f"{q[n]} := i.{q[n]}" for n in schema.names) + ")"
    return f"""
    SELECT line_no, err,
           CASE WHEN err IS NOT NULL THEN left(to_json({row})::VARCHAR, {opts.raw_preview_chars}) END AS raw,
           {", ".join(f"n_{f} AS {f}" for f in (*FIELDS, "extra"))}
    FROM (SELECT *, {cols}, {_err_case(checks)} AS err FROM (SELECT *{"".join(", " + p for p in pre)} FROM {source})) i
    """


# ---------------------------------------------------------------------------------------------
# Readers
# ---------------------------------------------------------------------------------------------


def _json_error(line: str) -> str:
    """A precise message for a line DuckDB found invalid: where the JSON breaks, and how."""
    try:
        json.loads(line)
    except json.JSONDecodeError as e:
        if e.pos >= len(line.rstrip()) - 1 or "Unterminated string" in e.msg:
            return f"truncated JSON: the line ends (at column {len(line)}) before the record closes ({e.msg} column {e.colno})"
        return f"invalid JSON: {e.msg} at column {e.colno}"
    except RecursionError:
        return "invalid JSON: nested too deeply"
    return "not valid JSON (rejected by the strict parser: NaN, control characters or a duplicate-key oddity)"


def _jsonl_chunks(src: SourceFile, chunk_bytes: int) -> Iterator[tuple[int, bytes]]:
    """Yield (lines before this chunk, chunk of whole lines) from a JSONL file, any compression."""
    compression = "detect" if src.path.endswith(".gz") else None
    with src.fs.open_input_stream(src.path, compression=compression) as f:
        buf, done, first = b"", 0, True
        while True:
            data = f.read(chunk_bytes)
            if first and data.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte-order mark is not part of line 1
                data, first = data[3:], False
            first = False
            if not data:
                if buf:
                    yield done, buf
                return
            buf += data
            cut = buf.rfind(b"\n")
            if cut < 0:
                continue
            piece, buf = buf[: cut + 1], buf[cut + 1 :]
            yield done, piece
            done += piece.count(b"\n")


_HASH_SRC = ("concat_ws(chr(31), epoch_us(timestamp)::VARCHAR, task_id, domain, model, messages, outcome, "
             "coalesce(reference, ''), coalesce(extra, ''))")
_OUT_COLS = (*FIELDS, "extra")


def _lean(sql: str, passthrough: tuple[str, ...]) -> str:
    """The Parquet batch query: validation, key and a 64-bit hash of the key -- but NOT the big JSON
    text columns that are already strings in the file (`passthrough`): those never round-trip through
    DuckDB; Python takes them straight from the Arrow batch. Stored keys are looked up afterwards on
    the narrow (line_no, h, id) columns alone (`_Loader._drop_stored`): joining `task_log_ids` here
    would build the join's hash table out of the batch's whole rows, text and all."""
    rest = ", ".join(c for c in _OUT_COLS if c not in ("id", *passthrough))
    return f"""
    SELECT line_no, err, raw, id, {rest}, hash(id) AS h FROM (
        SELECT line_no, err, raw, CASE WHEN err IS NULL THEN coalesce(id, md5({_HASH_SRC})) END AS id, {rest}
        FROM ({sql}) v0)
    """


def _redact_sql() -> str:
    """Redaction of the few rows that passed the prefilter (table `_r`): texts replaced, counts per
    kind, originals and a JSON validity flag (the shape `_finish_redaction` expects)."""
    reds = ", ".join(f"{R.sql_redact(c)} AS {c}" for c in _TEXT_COLS)
    counts = ", ".join(
        f"{' + '.join(R.sql_count(f'coalesce({c}, {chr(39)}{chr(39)})', k, c) for c in _TEXT_COLS)} AS r_{k}"
        for k in R.KINDS
    )
    origs = ", ".join(f"{c} AS o_{c}" for c in _TEXT_COLS)
    ok = " AND ".join(f"coalesce(json_valid({c}), true)" for c in _TEXT_COLS)
    return (f"SELECT i, true AS hit, {ok} AS red_ok, * EXCLUDE (i, hit) FROM "
            f"(SELECT i, true AS hit, {reds}, {counts}, {origs} FROM _r) x")


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


_PREFILTER = {c: R.prefilter_regex(c) for c in _TEXT_COLS}

_WORKERS = max(1, min(4, os.cpu_count() or 1))
"""Threads for the Arrow work of a batch (regex prefilter, Parquet encoding): Arrow's kernels release
the GIL, so the cores DuckDB leaves idle between its queries do this work side by side."""
_POOL: tuple[int, ThreadPoolExecutor] | None = None


def _pool() -> ThreadPoolExecutor:
    """The process's ingest threads (made anew in a forked child: a parent's threads do not exist there)."""
    global _POOL
    if _POOL is None or _POOL[0] != os.getpid():
        _POOL = (os.getpid(), ThreadPoolExecutor(_WORKERS, thread_name_prefix="flywheel-ingest"))
    return _POOL[1]


def _pieces(n: int, parts: int, min_rows: int = 8192) -> list[tuple[int, int]]:
    """(offset, length) of `parts` near-equal slices of n rows (fewer, each >= min_rows, when n is small)."""
    parts = max(1, min(parts, n // min_rows or 1))
    bounds = np.linspace(0, n, parts + 1).astype(int)
    return [(int(a), int(b - a)) for a, b in zip(bounds[:-1], bounds[1:], strict=True) if b > a]


def prefilter_hits(cols: dict[str, pa.ChunkedArray | pa.Array], n: int) -> pa.Array:
    """True where any text column may hold something to redact (the cheap RE2 necessary condition of
    `redact.prefilter_regex`), computed over row slices of every column in parallel threads."""
    tasks = [(c, off, ln) for c in _TEXT_COLS for off, ln in _pieces(n, _WORKERS)]
    outs = list(_pool().map(lambda t: pc.match_substring_regex(cols[t[0]].slice(t[1], t[2]), _PREFILTER[t[0]]),
                            tasks))
    by_col: dict[str, list] = {}
    for (c, _, _), m in zip(tasks, outs, strict=True):
        by_col.setdefault(c, []).extend(m.chunks if isinstance(m, pa.ChunkedArray) else [m])
    hit = None
    for chunks in by_col.values():
        col = pa.chunked_array(chunks, pa.bool_()).combine_chunks()
        hit = col if hit is None else pc.or_kleene(hit, col)
    return pc.fill_null(hit, False)


_STATS_COLS = ["id", "timestamp", "task_id", "domain", "model", "log_date", "source_file", "source_line",
               "ingested_at", "redactions"]


class _PartWriter:
    """Parquet files of one run: `<task_logs dir>/<YYYY-MM-DD>/part-<run>-<seq>.parquet`, per batch and
    day one file for each slice of >= 64k rows, encoded in parallel threads, each written under a
    temporary name and renamed only when all files of the batch are complete, so the `task_logs` view
    never sees a half-written batch."""

    def __init__(self, folder: Path, run_id: str):
        self.folder, self.run_id = folder, run_id
        self.paths: list[Path] = []
        self._seq = 0

    @staticmethod
    def _encode(job: tuple[pa.Table, Path]) -> Path:
        part, path = job
        tmp = path.with_name(f".{path.name}.tmp")
        pq.write_table(part.cast(TASK_LOGS_ARROW), tmp, compression="snappy",
                       use_dictionary=["task_id", "domain", "model", "source_file"],
                       write_statistics=_STATS_COLS)  # min/max of long JSON text: costly, never used
        return tmp

    def write(self, table: pa.Table) -> None:
        days = table["log_date"].unique()
        jobs: list[tuple[pa.Table, Path]] = []
        for day in days.to_pylist():
            part = table if len(days) == 1 else table.filter(pc.equal(table["log_date"], pa.scalar(day, pa.date32())))
            for off, ln in _pieces(len(part), _WORKERS, min_rows=65_536):
                path = self.folder / day.isoformat() / f"part-{self.run_id}-{self._seq:05d}.parquet"
                path.parent.mkdir(parents=True, exist_ok=True)
                self._seq += 1
                jobs.append((part.slice(off, ln), path))
        futures = [_pool().submit(self._encode, j) for j in jobs]
        wait(futures)
        failed = [f.exception() for f in futures if f.exception() is not None]
        if failed:  # nothing of this batch becomes visible
            for _, path in jobs:
                with contextlib.suppress(OSError):
                    path.with_name(f".{path.name}.tmp").unlink()
            raise failed[0]
        tmps = [f.result() for f in futures]
        for tmp, (_, path) in zip(tmps, jobs, strict=True):
            os.replace(tmp, path)
            self.paths.append(path)

    def discard(self) -> None:
        for p in self.paths:
            p.unlink(missing_ok=True)


class _Loader:
    """State of one ingest call: connection, run id, report, options, output files."""

    def __init__(self, con: duckdb.DuckDBPyConnection, opts: IngestOptions, log_date: dt.date | None,
                 report: IngestReport, progress: Callable[[int], None] | None):
        self.con, self.opts, self.report, self.progress = con, opts, report, progress
        self.log_date = log_date
        self.log_date_sql = f"DATE '{log_date.isoformat()}'" if log_date else "NULL::DATE"
        self.now = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
        self._jsonl_sql = _lean(_jsonl_sql(opts), ())
        self.out = _PartWriter(task_logs_dir(con), report.run_id)

    # -- readers ------------------------------------------------------------------------------
    def load_jsonl(self, src: SourceFile) -> None:
        try:
            for before, piece in _jsonl_chunks(src, self.opts.jsonl_chunk_bytes):
                self._jsonl_piece(src, before, piece)
        except OSError as e:  # unreadable / corrupt compressed file: one quarantined entry, keep going
            self._file_error(src, f"file could not be read: {e}")

    def _jsonl_piece(self, src: SourceFile, before: int, piece: bytes) -> None:
        bad: list[dict] = []
        try:
            text = piece.decode("utf-8")
            arr = pc.list_flatten(pc.split_pattern(pa.array([text], pa.large_string()), "\n"))
            if text.endswith("\n"):
                arr = arr.slice(0, len(arr) - 1)
            line_no = np.arange(before + 1, before + 1 + len(arr), dtype=np.int64)
        except UnicodeDecodeError:  # slow path for this chunk only: find the bad lines
            raw_lines = piece.split(b"\n")
            if piece.endswith(b"\n"):
                raw_lines.pop()
            good, nos = [], []
            for i, raw in enumerate(raw_lines):
                n = before + 1 + i
                try:
                    good.append(raw.decode("utf-8"))
                    nos.append(n)
                except UnicodeDecodeError as e:
                    bad.append(self._qrow(src, n, "invalid_utf8", None,
                                          f"line {n}: invalid UTF-8 at byte {e.start} ({raw[e.start:e.start + 4]!r}); "
                                          "re-encode the file as UTF-8",
                                          raw.decode("utf-8", "backslashreplace")))
            arr, line_no = pa.array(good, pa.large_string()), np.asarray(nos, dtype=np.int64)
        batch = pa.table({"line_no": line_no, "line": arr})
        batch = pa.Table.from_batches(batch.to_batches(max_chunksize=_SCAN_CHUNK))
        batch = batch.filter(pc.invert(pc.match_substring_regex(batch["line"], r"^\s*$")))  # blank: not records
        self.report.lines_read += len(batch) + len(bad)
        if bad:
            self._quarantine_rows(bad)
        if len(batch):
            self._finish_batch(src, None, self._query(self._jsonl_sql, _b=batch), (), 0, lines=batch)
        if self.progress:
            self.progress(len(batch) + len(bad))

    def load_parquet(self, src: SourceFile) -> None:
        try:
            pf = pq.ParquetFile(src.fs.open_input_file(src.path))
        except Exception as e:  # noqa: BLE001 -- any unreadable file is a quarantine entry, never a crash
            self._file_error(src, f"not a readable Parquet file: {e}")
            return
        schema = pf.schema_arrow
        if isinstance(src.fs, pafs.LocalFileSystem) and "line_no" not in schema.names:
            self._parquet_local(src, pf.metadata.num_rows, schema)
            return
        passthrough = tuple(c for c in _TEXT_COLS if c in JSON_FIELDS and c in schema.names
                            and _arrow_kind(schema.field(c).type) == "string")
        lean = _lean(_parquet_sql(schema, self.opts), passthrough)
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
            t = pa.Table.from_batches(t.to_batches(max_chunksize=_SCAN_CHUNK))  # zero-copy; lets DuckDB scan in parallel
            done += n
            self.report.lines_read += n
            self._finish_batch(src, t, self._query(lean, _b=t), passthrough, done - n)
            if self.progress:
                self.progress(n)

    def _parquet_local(self, src: SourceFile, rows: int, schema: pa.Schema) -> None:
        """A local Parquet file: DuckDB reads it itself (much cheaper than decoding it with pyarrow
        and handing the batches over), one row range per batch -- row groups outside the range are
        skipped -- so memory stays flat and each batch sees the keys of the ones before."""
        step = self.opts.parquet_batch_rows
        path = _lit(src.path)
        for a in range(0, rows, step):
            b = min(rows, a + step)
            reader = (f"(SELECT * EXCLUDE (file_row_number), file_row_number + 1 AS line_no "
                      f"FROM read_parquet({path}, file_row_number = true) "
                      f"WHERE file_row_number >= {a} AND file_row_number < {b})")
            sql = _lean(_parquet_sql(schema, self.opts, reader), ())
            try:
                cand = self._query(sql)
            except duckdb.Error as e:  # corrupt page / row group: say where, keep going
                self._file_error(src, f"Parquet read failed after row {a}: {e}")
                return
            if len(cand) != b - a:
                raise AssertionError(f"read {len(cand)} rows of {src.name} [{a}, {b}), expected {b - a} (a bug)")
            self.report.lines_read += b - a
            self._finish_batch(src, None, cand, (), a)
            if self.progress:
                self.progress(b - a)

    def _file_error(self, src: SourceFile, reason: str) -> None:
        self.report.lines_read += 1
        self._quarantine_rows([self._qrow(src, 0, "unreadable_file", None, f"{src.name}: {reason}", "")])

    # -- one batch ----------------------------------------------------------------------------
    def _query(self, sql: str, **tables: pa.Table) -> pa.Table:
        for name, t in tables.items():
            self.con.register(name, t)
        try:
            return self.con.sql(sql).to_arrow_table()
        finally:
            for name in tables:
                self.con.unregister(name)

    def _finish_batch(self, src: SourceFile, t: pa.Table | None, cand: pa.Table, passthrough: tuple[str, ...],
                      base: int, lines: pa.Table | None = None) -> None:
        """One batch (Parquet, or a JSONL chunk), validated and keyed by DuckDB (`cand`): quarantine, dedupe,
        redact the rare prefilter hits, write. Columns in `passthrough` are taken from the Arrow batch `t`;
        a JSONL chunk passes its raw `lines`, so an invalid line's quarantine reason says where the JSON breaks."""
        bad = pc.is_valid(cand["err"])
        if pc.any(bad).as_py():
            self._quarantine_from_cand(src, cand.filter(bad), lines)
            cand = cand.filter(pc.invert(bad))
        n_clean = len(cand)
        if not n_clean:
            return
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
        cols = {c: (t[c].take(idx) if c in passthrough else cand[c]) for c in _OUT_COLS}
        n = len(cand)
        red = pa.array(np.zeros(n, np.int32))
        if self.opts.redact and n:
            hit = prefilter_hits(cols, n)
        new = pa.table({**cols, "line_no": cand["line_no"], "redactions": red})
        if self.opts.redact and n:
            if pc.any(hit).as_py():
                new = self._redact_rows(new, hit)
        if n:
            self._write(src, new)
        self.report.ingested += n
        self.report.duplicates += n_clean - n

    def _drop_stored(self, cand: pa.Table) -> pa.Table:
        """`cand` without the rows whose id is already in `task_log_ids` (duplicates). The join runs
        on the narrow key columns only, and on the 64-bit hash first, so it stays cheap however large
        the batch's text or the warehouse's history."""
        keys = cand.select(["line_no", "h", "id"])
        stored = self._query("SELECT s.line_no FROM _s s SEMI JOIN task_log_ids k ON s.h = k.h AND s.id = k.id",
                             _s=keys)
        if not len(stored):
            return cand
        drop = pc.is_in(cand["line_no"], value_set=stored["line_no"].combine_chunks())
        return cand.filter(pc.invert(drop))

    def _redact_rows(self, new: pa.Table, hit: pa.Array) -> pa.Table:
        """Redact the rows flagged by the prefilter (in DuckDB; JSON-unsafe ones in Python) and
        splice the results back in place; the rest of the batch is not copied row by row."""
        hit = hit.combine_chunks() if isinstance(hit, pa.ChunkedArray) else hit
        pos = np.flatnonzero(hit.to_numpy(zero_copy_only=False))
        rows = pa.table({"i": pos, **{c: _take(new[c], pos) for c in _TEXT_COLS}})
        done = self._finish_redaction(self._query(_redact_sql(), _r=rows)).sort_by("i")
        red = np.zeros(len(new), np.int32)
        red[pos] = done["redactions"].to_numpy()
        cols = {c: new[c] for c in new.column_names}
        for c in _TEXT_COLS:  # splice only the values redaction changed (most hits touch one column)
            changed = pc.fill_null(pc.not_equal(rows[c], done[c].combine_chunks().cast(pa.string())), False)
            ch = np.flatnonzero(changed.to_numpy(zero_copy_only=False))
            if len(ch):
                cols[c] = _splice(new[c], pos[ch], done[c].combine_chunks().take(pa.array(ch)))
        cols["redactions"] = pa.array(red)
        return pa.table(cols)

    def _write(self, src: SourceFile, new: pa.Table) -> None:
        n = len(new)
        if self.log_date:
            day = pa.array(np.full(n, np.datetime64(self.log_date.isoformat(), "D")), pa.date32())
        else:
            day = pc.cast(new["timestamp"], pa.date32())
        name = pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array([src.name])).cast(pa.string())
        at = pa.array(np.full(n, np.datetime64(self.now, "us")), pa.timestamp("us"))
        out = pa.table({
            **{c: new[c] for c in _OUT_COLS},
            "log_date": day, "source_file": name, "source_line": new["line_no"], "ingested_at": at,
            "redactions": new["redactions"],
        })
        self.out.write(out)
        self.con.register("_n", out.select(["id", "log_date"]))
        try:
            self.con.execute("INSERT INTO task_log_ids SELECT id, log_date, ?, hash(id) FROM _n", [self.report.run_id])
        finally:
            self.con.unregister("_n")

    def _finish_redaction(self, new: pa.Table) -> pa.Table:
        """Count what SQL redacted; redo in Python the rare rows where a replacement on JSON text cut
        through an escape (e.g. the `n` of `\\n` taken as part of an e-mail) and broke the JSON."""
        rows = pc.any(new["hit"]).as_py()
        bad = pc.invert(new["red_ok"])
        broken = np.flatnonzero(bad.to_numpy(zero_copy_only=False)).tolist() if pc.any(bad).as_py() else []
        if broken:
            cols = {c: new[c].to_pylist() for c in _TEXT_COLS}
            counts = {k: new[f"r_{k}"].to_pylist() for k in R.KINDS}
            for i in broken:
                for k in R.KINDS:
                    counts[k][i] = 0
                for c in _TEXT_COLS:
                    cols[c][i], cnt = R.redact_json_text(new[f"o_{c}"][i].as_py(), messages=(c == "messages"))
                    for k, v in cnt.items():
                        counts[k][i] += v
            for name, vals in [*cols.items(), *((f"r_{k}", v) for k, v in counts.items())]:
                new = new.set_column(new.schema.get_field_index(name), name, pa.array(vals, new.schema.field(name).type))
        total = None
        for k in R.KINDS:
            col = pc.cast(new[f"r_{k}"], pa.int64())
            n = int(pc.sum(col).as_py() or 0) if rows else 0
            if n:
                self.report.redactions_by_kind[k] = self.report.redactions_by_kind.get(k, 0) + n
                self.report.redactions += n
            total = col if total is None else pc.add(total, col)
        return new.append_column("redactions", pc.cast(total, pa.int32()))

    # -- quarantine ---------------------------------------------------------------------------
    def _qrow(self, src: SourceFile, line: int, kind: str, fld: str | None, reason: str, raw: str) -> dict:
        return {"source_file": src.name, "source_line": line, "reason": reason, "field": fld,
                "raw": raw[: self.opts.raw_preview_chars], "kind": kind, "log_date": None}

    def _quarantine_from_cand(self, src: SourceFile, bad: pa.Table, lines: pa.Table | None) -> None:
        rows = bad.select(["line_no", "err", "raw", "timestamp"]).to_pylist()
        full: dict[int, str] = {}
        need = [r["line_no"] for r in rows if r["err"]["k"] == "invalid_json"]
        if need and lines is not None:
            sel = lines.filter(pc.is_in(lines["line_no"], pa.array(need, pa.int64())))
            full = dict(zip(sel["line_no"].to_pylist(), sel["line"].to_pylist(), strict=True))
        out = []
        for r in rows:
            e, n = r["err"], r["line_no"]
            msg = f"line {n}: {_json_error(full[n])}" if e["k"] == "invalid_json" and n in full else e["m"]
            q = self._qrow(src, n, e["k"], e["f"], msg, r["raw"] or "")
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


_Q_SCHEMA = pa.schema([("source_file", pa.string()), ("source_line", pa.int64()), ("reason", pa.string()),
                       ("field", pa.string()), ("raw", pa.string()), ("kind", pa.string()), ("log_date", pa.date32())])


def ingest(
    source: str | os.PathLike[str],
    con: duckdb.DuckDBPyConnection | str | os.PathLike[str] | None = None,
    *,
    log_date: dt.date | str | None = None,
    options: IngestOptions | None = None,
    progress: Callable[[int], None] | None = None,
) -> IngestReport:
    """Ingest every log file at `source` (file, folder or URI) into the warehouse `con`.

    `con` is an open DuckDB connection, a warehouse path, or None for `$FLYWHEEL_HOME`'s warehouse.
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
    try:
        ensure_tables(connection)
        connection.execute("SET TimeZone = 'UTC'")
        report = IngestReport(run_id=uuid.uuid4().hex, source=os.fspath(source), files=len(sources),
                              log_date=day.isoformat() if day else None)
        t0, started = time.perf_counter(), dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
        loader = _Loader(connection, opts, day, report, progress)
        for src in sources:
            (loader.load_parquet if src.format == "parquet" else loader.load_jsonl)(src)
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
            loader.out.discard()
            for table in ("task_log_ids", "quarantine"):
                try:
                    connection.execute(f"DELETE FROM {table} WHERE run_id = ?", [loader.report.run_id])
                except duckdb.Error:
                    pass
        raise
    finally:
        if own:
            connection.close()
