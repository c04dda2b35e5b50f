"""Reading JSONL logs: whole-line byte chunks of a file (any compression), the lines of a chunk as an
Arrow table, and the precise reason a line is not valid JSON."""

from __future__ import annotations

import json
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flywheel.logs.arrow_ops import SCAN_CHUNK
from flywheel.logs.sources import SourceFile


def json_error(line: str) -> str:
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


def jsonl_chunks(src: SourceFile, chunk_bytes: int) -> Iterator[tuple[int, bytes]]:
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


def chunk_lines(before: int, piece: bytes) -> tuple[pa.Table, list[tuple[int, str, str]]]:
    """The lines of one chunk as a table (`line_no`, `line`; blank lines dropped: they are not records),
    and the lines that are not UTF-8 as (line number, reason, raw text with the bad bytes escaped)."""
    bad: list[tuple[int, str, str]] = []
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
                bad.append((n, f"line {n}: invalid UTF-8 at byte {e.start} ({raw[e.start:e.start + 4]!r}); "
                               "re-encode the file as UTF-8", raw.decode("utf-8", "backslashreplace")))
        arr, line_no = pa.array(good, pa.large_string()), np.asarray(nos, dtype=np.int64)
    batch = pa.table({"line_no": line_no, "line": arr})
    batch = pa.Table.from_batches(batch.to_batches(max_chunksize=SCAN_CHUNK), schema=batch.schema)  # may be empty
    batch = batch.filter(pc.invert(pc.match_substring_regex(batch["line"], r"^\s*$")))  # blank: not records
    return batch, bad


def is_json_document(src: SourceFile) -> bool:
    """True for a `.json` / `.json.gz` file that is one JSON document rather than JSON Lines: an array
    of records (its first non-blank character is `[`), or one pretty-printed record (its first
    non-blank line is a lone `{`, which no JSON line can be)."""
    if not src.path.lower().endswith((".json", ".json.gz")):
        return False
    compression = "detect" if src.path.endswith(".gz") else None
    with src.fs.open_input_stream(src.path, compression=compression) as f:
        head = f.read(4096).removeprefix(b"\xef\xbb\xbf").lstrip()
    return head[:1] == b"[" or head.split(b"\n", 1)[0].strip() == b"{"


def json_array_batches(src: SourceFile, batch_records: int) -> Iterator[pa.Table]:
    """The records of a JSON array file (or the one record of a pretty-printed JSON object file) as tables of (`line_no` = 1-based index in the array, `line` =
    the record as compact JSON text), `batch_records` at a time. The whole file is parsed here, at once:
    for exports larger than memory, write JSON Lines. Raises ValueError saying where a malformed
    array breaks."""
    compression = "detect" if src.path.endswith(".gz") else None
    with src.fs.open_input_stream(src.path, compression=compression) as f:
        data = f.read()
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as e:
        raise ValueError(f"invalid UTF-8 at byte {e.start}; re-encode the file as UTF-8") from e
    what = "JSON array" if text.lstrip().startswith("[") else "JSON record"
    try:
        records = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"not a valid {what}: {e.msg} at line {e.lineno} column {e.colno}") from e
    except RecursionError as e:
        raise ValueError(f"not a valid {what}: nested too deeply") from e
    if isinstance(records, dict):  # one pretty-printed record
        records = [records]
    return _record_batches(records, batch_records)


def _record_batches(records: list, batch_records: int) -> Iterator[pa.Table]:
    for start in range(0, len(records), batch_records):
        part = records[start:start + batch_records]
        yield pa.table({"line_no": np.arange(start + 1, start + 1 + len(part), dtype=np.int64),
                        "line": pa.array([json.dumps(r, ensure_ascii=False, separators=(",", ":")) for r in part],
                                         pa.large_string())})
