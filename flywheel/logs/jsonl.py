"""Reading JSON logs as streams: whole-line byte chunks of a JSONL file and the records of a JSON array
file (any compression, under a decompression cap; a line or record over the size cap streams by
unbuffered), the lines of a chunk as an Arrow table, and the precise reason a line is not valid JSON."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flywheel.logs.arrow_ops import SCAN_CHUNK
from flywheel.logs.json_array import HEAD_BYTES, Skipped, array_records, too_large
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


class TooExpanded(ValueError):
    """A compressed file that expands past `max_decompression_ratio` times its size: the rest is not read."""


class _Capped:
    """A decompressing stream that raises `TooExpanded` once it has produced more than `limit` bytes."""

    def __init__(self, f, size: int, ratio: float):
        self.f, self.size, self.ratio, self.out = f, size, ratio, 0
        self.limit = ratio * max(size, 1 << 20)  # small files may expand a lot and still be small

    def read(self, n: int) -> bytes:
        if self.out > self.limit:  # the read that crossed the cap was handed on: its whole lines are kept
            raise TooExpanded(f"decompresses to more than {self.ratio:g}x its size ({self.size / 1024:.0f} KiB "
                              f"compressed, {self.out / 2**20:.0f} MiB read; max_decompression_ratio): the rest "
                              "of the file is not read")
        data = self.f.read(n)
        self.out += len(data)
        return data


@contextlib.contextmanager
def open_stream(src: SourceFile, max_ratio: float) -> Iterator:
    """`src` as a binary stream, decompressed (`.gz`) under the expansion cap `max_ratio`."""
    gz = src.path.lower().endswith(".gz")
    with src.fs.open_input_stream(src.path, compression="gzip" if gz else None) as f:
        yield _Capped(f, src.fs.get_file_info(src.path).size or 0, max_ratio) if gz else f


def _breaks(piece: bytes) -> int:
    """Line breaks in `piece`: LF, CRLF, or a CR alone (old Mac exports)."""
    return piece.count(b"\n") + piece.count(b"\r") - piece.count(b"\r\n")


def _first_break(data: bytes) -> int:
    found = [i for i in (data.find(b"\n"), data.find(b"\r")) if i >= 0]
    return min(found) if found else -1


READ_BYTES = 4 << 20
"""Bytes per read of a JSONL stream: whole lines gather into chunks of `jsonl_chunk_bytes`, but what is
held beyond them is at most one read and the line in progress (a gzip bomb's line costs ~the line cap)."""


LONG_PIECE = READ_BYTES + (READ_BYTES >> 2)
"""Whole lines longer than one read and the line before it: a line that spanned reads is in them."""


def _joined(parts: list[bytes]) -> bytes:
    """The pieces as one chunk (one piece: itself, not copied), the list emptied so it holds none of them."""
    out = parts[0] if len(parts) == 1 else b"".join(parts)
    parts.clear()
    return out


def jsonl_chunks(src: SourceFile, chunk_bytes: int, max_line_bytes: int,
                 max_ratio: float) -> Iterator[tuple[int, bytes] | Skipped]:
    """Yield (lines before this chunk, chunk of whole lines of about `chunk_bytes`) from a JSONL file,
    any compression; lines end at LF, CRLF or a lone CR. A line longer than `max_line_bytes` that spans
    reads is not buffered: it streams by and is yielded as `Skipped` (with its first bytes), after the
    lines before it. Raises `TooExpanded` past the decompression cap, after the whole lines read."""
    pending: list[bytes] = []  # whole lines read, not yet yielded
    size, start = 0, 0

    def flush() -> Iterator[tuple[int, bytes]]:
        nonlocal pending, size
        if pending:  # nothing here holds the pieces while the caller works on the chunk
            parts, pending, size = pending, [], 0
            yield start, _joined(parts)

    with open_stream(src, max_ratio) as f:
        buf, done, first, skip, head, cr = bytearray(), 0, True, 0, b"", False  # buf: the line in progress
        while True:
            try:
                data = f.read(min(chunk_bytes, READ_BYTES))
            except TooExpanded:
                yield from flush()
                raise
            if first:  # a UTF-8 byte-order mark is not part of line 1
                data, first = data.removeprefix(b"\xef\xbb\xbf"), False
            if cr and data.startswith(b"\n"):  # the LF of a CRLF whose CR ended the last read
                data = data[1:]
            cr = False
            if not data:
                yield from flush()
                if skip:
                    yield too_large("line", done + 1, skip, max_line_bytes, head)
                elif buf:
                    yield done, bytes(buf)
                return
            if skip:
                nl = _first_break(data)
                if nl < 0:
                    skip += len(data)
                    continue
                yield from flush()
                yield too_large("line", done + 1, skip + nl, max_line_bytes, head)
                end = nl + 2 if data[nl:nl + 2] == b"\r\n" else nl + 1
                cr = end == len(data) and data.endswith(b"\r")
                done, skip, data = done + 1, 0, data[end:]
            buf += data  # in place: a long line in progress is never copied whole
            cut = max(buf.rfind(b"\n"), buf.rfind(b"\r"))
            if cut == len(buf) - 1 and buf.endswith(b"\r"):  # its LF may come with the next read
                cut = max(buf.rfind(b"\n", 0, cut), buf.rfind(b"\r", 0, cut))
            if cut >= 0:
                long = cut + 1 > LONG_PIECE
                if long:  # a long line read in many reads: handed on as it lies, never copied
                    rest = buf[cut + 1:]  # (the start of the next line: less than one read)
                    del buf[cut + 1:]
                    piece, buf = buf, rest
                    yield from flush()  # and in a chunk of its own, which joining would copy
                else:
                    with memoryview(buf) as view:  # one copy (slicing the bytearray first would make two)
                        piece = bytes(view[: cut + 1])
                    del buf[: cut + 1]  # O(1): a bytearray drops its head in place
                if not pending:
                    start = done
                pending.append(piece)
                size += len(piece)
                done += _breaks(piece)
                del piece
                if size >= chunk_bytes or long:
                    yield from flush()
            if len(buf) > max_line_bytes:  # the line in progress is already too long: let it stream by
                head, skip, buf = bytes(buf[:HEAD_BYTES]), len(buf), bytearray()


def chunk_lines(before: int, piece: bytes) -> tuple[pa.Table, list[tuple[int, str, str, str]]]:
    """The lines of one chunk as a table (`line_no`, `line`; blank lines dropped: they are not records),
    and the lines that are not UTF-8 as (line number, kind, reason, raw text with the bad bytes escaped)."""
    bad: list[tuple[int, str, str, str]] = []
    lone_cr = b"\r" in piece and piece.count(b"\r") != piece.count(b"\r\n")  # else a CRLF line keeps its CR
    try:
        whole = _utf8(piece)
        if not lone_cr and piece.count(b"\n") <= FEW_LINES:  # a long line's own chunk: its lines not copied
            arr, line_no = _views(before, piece, whole)
        else:
            split = pc.split_pattern_regex(whole, r"\r\n|\r|\n") if lone_cr else pc.split_pattern(whole, "\n")
            arr = pc.list_flatten(split)
            if piece.endswith((b"\n", b"\r")):
                arr = arr.slice(0, len(arr) - 1)
            line_no = np.arange(before + 1, before + 1 + len(arr), dtype=np.int64)
    except pa.ArrowInvalid:  # not UTF-8: the slow path for this chunk only finds the bad lines
        raw_lines = re.split(rb"\r\n|\r|\n", piece) if lone_cr else piece.split(b"\n")
        if piece.endswith((b"\n", b"\r")):
            raw_lines.pop()
        good, nos = [], []
        for i, raw in enumerate(raw_lines):
            n = before + 1 + i
            try:
                good.append(raw.decode("utf-8"))
                nos.append(n)
            except UnicodeDecodeError as e:
                bad.append((n, "invalid_utf8", f"line {n}: invalid UTF-8 at byte {e.start} ({raw[e.start:e.start + 4]!r}); "
                               "re-encode the file as UTF-8", raw.decode("utf-8", "backslashreplace")))
        arr, line_no = pa.array(good, pa.large_string()), np.asarray(nos, dtype=np.int64)
    batch = pa.table({"line_no": line_no, "line": arr})
    batch = pa.Table.from_batches(batch.to_batches(max_chunksize=SCAN_CHUNK), schema=batch.schema)  # may be empty
    blank = pc.match_substring_regex(batch["line"], r"^\s*$")  # blank lines are not records
    return (batch.filter(pc.invert(blank)) if pc.any(blank).as_py() else batch), bad


FEW_LINES = 16
"""A chunk of at most this many lines (a long line's chunk, `LONG_PIECE`) is split into views of its bytes."""
_NOT_BLANK = re.compile(rb"[^\t\n\f\r ]")  # what the blank-line filter's `\s` does not match


def _views(before: int, piece: bytes, whole: pa.LargeStringArray) -> tuple[pa.ChunkedArray, np.ndarray]:
    """The LF-ended lines of `piece` (its UTF-8 checked: `whole`) but blank ones, each a view of its bytes,
    and their line numbers: splitting (or filtering) would copy them, and a long line is tens of MiB."""
    data, bounds, nos, start, n = whole.buffers()[2], [], [], 0, before
    while start < len(piece):
        end = piece.find(b"\n", start)
        end = len(piece) if end < 0 else end
        n += 1
        if _NOT_BLANK.search(piece, start, end):
            bounds.append((start, end))
            nos.append(n)
        start = end + 1
    arrays = [pa.Array.from_buffers(pa.large_string(), 1, [None, pa.py_buffer(np.array(b, dtype=np.int64)), data])
              for b in bounds]
    return pa.chunked_array(arrays, pa.large_string()), np.array(nos, dtype=np.int64)


def _utf8(piece: bytes) -> pa.LargeStringArray:
    """`piece` as one Arrow string, its bytes not copied (a chunk is tens of MiB, and fresh pages cost
    more than the copy); ArrowInvalid when it is not UTF-8 (Arrow's validation, a SIMD pass)."""
    offsets = pa.py_buffer(np.array([0, len(piece)], dtype=np.int64))
    raw = pa.LargeBinaryArray.from_buffers(pa.large_binary(), 1, [None, offsets, pa.py_buffer(piece)])
    return raw.cast(pa.large_string())


def is_json_document(src: SourceFile) -> bool:
    """True for a `.json` / `.json.gz` file that is one JSON document rather than JSON Lines: an array
    of records (its first non-blank character is `[`), or one pretty-printed record (its first
    non-blank line is a lone `{`, which no JSON line can be)."""
    if not src.path.lower().endswith((".json", ".json.gz")):
        return False
    head = _head(src)
    return head[:1] == b"[" or head.split(b"\n", 1)[0].strip() == b"{"


def json_array_batches(src: SourceFile, batch_records: int, batch_bytes: int, max_record_bytes: int,
                       max_ratio: float) -> Iterator[tuple[pa.Table, list[tuple[int, str, str, str]]]]:
    """The records of a JSON array file (or the one record of a pretty-printed JSON object file) as
    tables of (`line_no` = 1-based index in the array, `line` = the record's text as written), at most
    `batch_records` / about `batch_bytes` at a time, read as a stream (`json_array.array_records`), with
    the records that cannot be handed on as (index, kind, reason, raw). Raises ValueError where the
    file stops being an array (the records before it are yielded first)."""
    with open_stream(src, max_ratio) as f:
        if _head(src)[:1] == b"{":  # one record: read up to the cap
            data = f.read(max_record_bytes + 1).removeprefix(b"\xef\xbb\xbf")
            if len(data) > max_record_bytes:
                s = too_large("record", 1, len(data), max_record_bytes, data[:HEAD_BYTES])
                yield _table([], []), [(1, s.kind, s.reason, _text(s.head))]
            else:
                one = [(1, data)]
                del data
                yield _decoded(one)
            return
        recs: list[tuple[int, bytes]] = []
        size, bad, error, records = 0, [], None, array_records(f, max_record_bytes)
        while True:
            try:
                r = next(records, None)
            except ValueError as e:  # (TooExpanded too) the records read before it are kept
                r, error = None, e
            if r is None:
                break
            if isinstance(r, Skipped):
                bad.append((r.index, r.kind, r.reason, _text(r.head)))
                continue
            recs.append(r)
            size += len(r[1])
            del r
            if len(recs) >= batch_records or size >= batch_bytes:
                table, wrong = _decoded(recs)  # (it empties `recs`: the raw records are not held meanwhile)
                yield table, bad + wrong
                size, bad = 0, []
        if recs or bad:
            table, wrong = _decoded(recs)
            yield table, bad + wrong
        if error is not None:
            raise error


def _texts(raws: list[bytes | bytearray]) -> pa.ChunkedArray:
    """The records as Arrow text, in order: runs of short ones copied together, each long one (`LONG_PIECE`)
    a view of its own bytes. ArrowInvalid when one is not UTF-8."""
    chunks, short = [], []
    for raw in raws:
        if len(raw) < LONG_PIECE:
            short.append(raw)
            continue
        if short:
            chunks.append(pa.array(short, pa.large_binary()).cast(pa.large_string()))
            short = []
        chunks.append(_utf8(raw))
    if short or not chunks:
        chunks.append(pa.array(short, pa.large_binary()).cast(pa.large_string()))
    return pa.chunked_array(chunks, pa.large_string())


def _head(src: SourceFile) -> bytes:
    """The file's first 4 KiB (decompressed), without a byte-order mark and leading blanks."""
    compression = "gzip" if src.path.lower().endswith(".gz") else None
    with src.fs.open_input_stream(src.path, compression=compression) as f:
        return f.read(4096).removeprefix(b"\xef\xbb\xbf").lstrip()


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "backslashreplace")


def _table(nos: list[int], texts: list[str]) -> pa.Table:
    return pa.table({"line_no": pa.array(nos, pa.int64()), "line": pa.array(texts, pa.large_string())})


def _decoded(recs: list[tuple[int, bytes | bytearray]]) -> tuple[pa.Table, list[tuple[int, str, str, str]]]:
    """Records as a (line_no, line) table; the ones that are not UTF-8 as quarantine entries. Their bytes
    become Arrow text in one copy, a long record's in none (Arrow checks the UTF-8); `recs` is emptied."""
    nos = [n for n, _ in recs]
    try:
        text = _texts([raw for _, raw in recs])
    except pa.ArrowInvalid:  # not UTF-8: record by record, to find which
        text = None
    if text is not None:
        recs.clear()
        t = pa.table({"line_no": pa.array(nos, pa.int64()), "line": text})
        return pa.Table.from_batches(t.to_batches(max_chunksize=SCAN_CHUNK), schema=t.schema), []
    nos, texts, bad = [], [], []
    for n, raw in recs:
        try:
            texts.append(raw.decode("utf-8"))
            nos.append(n)
        except UnicodeDecodeError as e:
            bad.append((n, "invalid_utf8", f"record {n}: invalid UTF-8 at byte {e.start} ({bytes(raw[e.start:e.start + 4])!r}); "
                        "re-encode the file as UTF-8", _text(raw)))
    recs.clear()
    t = _table(nos, texts)
    return pa.Table.from_batches(t.to_batches(max_chunksize=SCAN_CHUNK), schema=t.schema), bad
