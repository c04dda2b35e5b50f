"""Compressed logs that expand without end: a line or record over the size cap streams by unbuffered and
is quarantined with its reason, the decompression cap cuts a bomb short, and the good records around
either are kept (ingested + quarantined + duplicates = records read)."""

from __future__ import annotations

import gzip
import json
import tracemalloc

import pyarrow as pa
import pytest

from flywheel.logs.ingest import ingest
from flywheel.logs.json_array import Skipped
from flywheel.logs.jsonl import FEW_LINES, chunk_lines, jsonl_chunks
from flywheel.logs.options import IngestOptions
from flywheel.logs.sources import list_sources

BOMB_MIB = 120


def _bomb(path, rec, array: bool) -> None:
    """A record whose one string decompresses to BOMB_MIB MiB (a few hundred KiB compressed), between two good ones."""
    with gzip.open(path, "wb", compresslevel=9) as f:
        first, last = json.dumps(rec(1)).encode(), json.dumps(rec(3)).encode()
        f.write(b"[" + first + b"," if array else first + b"\n")
        f.write(json.dumps(rec(2))[:-1].encode() + b', "x": "')
        for _ in range(BOMB_MIB):
            f.write(b"a" * 2**20)
        f.write(b'"}' + (b"," + last + b"]" if array else b"\n" + last + b"\n"))


def _balanced(r) -> None:
    assert r.lines_read == r.ingested + r.quarantined + r.duplicates


@pytest.mark.parametrize("name", ["bomb.jsonl.gz", "bomb.json.gz"])
def test_an_over_long_record_is_quarantined_and_its_neighbours_kept(name, rec, tmp_path, wh):
    _bomb(tmp_path / name, rec, name.endswith(".json.gz"))
    assert (tmp_path / name).stat().st_size < 2**20
    opts = IngestOptions(max_line_bytes=2**20, jsonl_chunk_bytes=2**20, max_decompression_ratio=1e6)
    r = ingest(tmp_path / name, wh, options=opts)
    _balanced(r)
    assert (r.lines_read, r.ingested, r.quarantined) == (3, 2, 1)
    (line, kind, reason), = wh.execute("SELECT source_line, kind, reason FROM quarantine").fetchall()
    unit = "record" if name.endswith(".json.gz") else "line"
    assert (line, kind) == (2, "line_too_large") and reason.startswith(f"{unit} 2: {unit} is at least ")
    assert sorted(wh.execute("SELECT id FROM task_logs").fetchall()) == [("r1",), ("r3",)]


@pytest.mark.parametrize("name", ["bomb.jsonl.gz", "bomb.json.gz"])
def test_the_decompression_cap_cuts_a_bomb_short(name, rec, tmp_path, wh):
    _bomb(tmp_path / name, rec, name.endswith(".json.gz"))
    r = ingest(tmp_path / name, wh, options=IngestOptions(max_decompression_ratio=50))  # 50 MiB of the 120
    _balanced(r)
    assert (r.ingested, r.quarantined) == (1, 1) and r.by_reason == {"unreadable_file": 1}
    reason = wh.execute("SELECT reason FROM quarantine").fetchall()[0][0]
    assert "decompresses to more than 50x its size" in reason and "the rest of the file is not read" in reason
    with pytest.raises(ValueError, match="max_decompression_ratio"):
        IngestOptions(max_decompression_ratio=float("nan"))


def test_an_over_long_line_is_never_held_whole(rec, tmp_path):
    _bomb(tmp_path / "bomb.jsonl.gz", rec, array=False)
    src = list_sources(tmp_path / "bomb.jsonl.gz")[0]
    list(jsonl_chunks(src, 2**20, 2**20, 1e6))  # warm: imports
    tracemalloc.start()
    try:
        items = list(jsonl_chunks(src, 2**20, 2**20, 1e6))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [type(i) for i in items] == [tuple, Skipped, tuple] and items[1].index == 2
    assert items[2][0] == 2 and items[2][1].startswith(b'{"id": "r3"')
    assert peak < 8 * 2**20, peak  # a few reads and the line cap, not the 120 MiB line


@pytest.mark.parametrize("eol", ["\r", "\r\n", "\n"])
@pytest.mark.parametrize("chunk", [5, 64, 1 << 20])
def test_lines_end_at_lf_crlf_or_a_lone_cr(eol, chunk, rec, tmp_path, wh):
    lines = [json.dumps(rec(1)), "not json", "", json.dumps(rec(3))]
    (tmp_path / "a.jsonl").write_bytes(eol.join(lines).encode() + eol.encode())
    r = ingest(tmp_path / "a.jsonl", wh, options=IngestOptions(jsonl_chunk_bytes=chunk))
    _balanced(r)
    assert (r.lines_read, r.ingested, r.quarantined) == (3, 2, 1)
    assert wh.execute("SELECT source_line FROM quarantine").fetchall() == [(2,)]
    assert sorted(wh.execute("SELECT source_line FROM task_logs").fetchall()) == [(1,), (4,)]


@pytest.mark.parametrize("tail", [b"\n", b"", b"\r\n"])
def test_a_chunk_of_few_lines_is_split_into_views_of_its_bytes(tail):
    """A long line's chunk is not copied to be split (it is tens of MiB): its lines point into it, and
    they are the lines a split gives, blank ones dropped, a CRLF line keeping its CR as elsewhere."""
    piece = bytearray(b'{"a": 1}\n\n  \n{"big": "' + b"x" * 100_000 + b'"}' + tail)
    table, bad = chunk_lines(10, piece)
    assert not bad and table["line_no"].to_pylist() == [11, 14]
    lines = table["line"].to_pylist()
    assert lines[0] == '{"a": 1}' and lines[1] == piece[piece.index(b'{"big"'):len(piece) - tail.endswith(b"\n")].decode()
    data = pa.py_buffer(piece)
    assert all(c.buffers()[2].address == data.address for c in table["line"].chunks)
    many = b"".join(b'{"n": %d}\n' % i for i in range(FEW_LINES + 1))
    assert chunk_lines(0, many)[0]["line_no"].to_pylist() == list(range(1, FEW_LINES + 2))
