"""The streaming JSON array reader: elements cut out exactly (escapes, strings holding brackets, reads
split anywhere), records over the cap skipped unbuffered, a broken tail losing only itself, and a
large array ingested in memory that does not grow with the file."""

from __future__ import annotations

import io
import json
import random
import tracemalloc

import pytest

from flywheel.logs.json_array import Skipped, array_records
from flywheel.logs.jsonl import json_array_batches
from flywheel.logs.sources import list_sources

TRICKY = ['a"b', "back\\slash", "\\", '\\"', "[", "]", "{", "}", ",", "é ✓ 用户", "\\\\\\\"", "", " , ] ["]


def _doc(seed: int, n: int) -> tuple[list, bytes]:
    rng = random.Random(seed)
    def value(depth: int):
        r = rng.random()
        if depth > 3 or r < 0.3:
            return rng.choice([*TRICKY, 1, -2.5e3, True, None])
        if r < 0.6:
            return [value(depth + 1) for _ in range(rng.randrange(4))]
        return {rng.choice(TRICKY) + str(i): value(depth + 1) for i in range(rng.randrange(4))}
    elems = [value(0) for _ in range(n)]
    text = json.dumps(elems, indent=rng.choice([None, 2]), ensure_ascii=rng.random() < 0.5)
    return elems, text.encode()


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("read_bytes", [1, 3, 7, 64, 1 << 20])
def test_elements_are_cut_exactly_wherever_the_reads_split(seed, read_bytes):
    elems, data = _doc(seed, 40)
    got = list(array_records(io.BytesIO(data), 1 << 20, read_bytes))
    assert [i for i, _ in got] == list(range(1, len(elems) + 1))
    assert [json.loads(t) for _, t in got] == elems


def test_a_record_over_the_cap_is_skipped_and_its_neighbours_kept():
    big = {"x": "y" * 5000}
    data = json.dumps([{"a": 1}, big, {"b": "]},["}]).encode()
    got = list(array_records(io.BytesIO(data), 1000, 64))
    assert got[0] == (1, b'{"a": 1}') and got[2] == (3, b'{"b": "]},["}')
    s = got[1]
    assert isinstance(s, Skipped) and (s.index, s.kind) == (2, "line_too_large") and s.head.startswith(b'{"x": "yyy')
    assert "record 2" in s.reason and "max_line_bytes" in s.reason


def test_a_broken_tail_loses_only_itself():
    got = list(array_records(io.BytesIO(b'[{"a": 1}, {"b": "unterminated'), 1 << 20, 5))
    assert got[0] == (1, b'{"a": 1}') and isinstance(got[1], Skipped)
    assert (got[1].index, got[1].kind) == (2, "invalid_json") and "truncated" in got[1].reason
    assert [type(x) for x in array_records(io.BytesIO(b"[1, 2,"), 99)][-1] is Skipped  # the array never closed
    assert list(array_records(io.BytesIO(b"\xef\xbb\xbf [ ] \n"), 99)) == []
    records = array_records(io.BytesIO(b"[1, 2] [3]"), 99)
    assert [next(records), next(records)] == [(1, b"1"), (2, b"2")]
    with pytest.raises(ValueError, match="after the array"):
        next(records)
    with pytest.raises(ValueError, match="not a JSON array"):
        list(array_records(io.BytesIO(b'{"a": [1]}'), 99))


def test_a_deep_record_is_text_like_any_other():
    deep = b"[" * 100_000 + b"]" * 100_000
    got = list(array_records(io.BytesIO(b"[1, " + deep + b", 2]"), 1 << 20, 4096))
    assert got == [(1, b"1"), (2, deep), (3, b"2")]


def test_a_large_array_is_read_in_memory_that_does_not_grow_with_it(rec, tmp_path):
    """~60 MB of records read through `json_array_batches`: the reader's peak allocation is its read and
    batch sizes, not the file's (parsed whole, the array took 3-6x its size)."""
    path = tmp_path / "big.json"
    with open(path, "w") as f:
        f.write("[")
        for i in range(60_000):
            f.write(("," if i else "") + json.dumps(rec(i, note="x" * 800)))
        f.write("]")
    src = list_sources(path)[0]
    (tmp_path / "warm.json").write_text(json.dumps([rec(0)]))
    list(json_array_batches(list_sources(tmp_path / "warm.json")[0], 10, 10, 1 << 20, 100.0))  # imports done
    tracemalloc.start()
    try:
        n = 0
        for batch, bad in json_array_batches(src, 32_768, 4 << 20, 16 << 20, 100.0):
            n += len(batch) + len(bad)
            assert not bad
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    size = path.stat().st_size
    assert n == 60_000 and size > 55 * 2**20 and peak < 0.5 * size, (size, peak)


def test_one_deep_record_never_loses_its_neighbours(rec, tmp_path, wh):
    from flywheel.logs.ingest import ingest

    deep = json.dumps(rec(2))[:-1] + ', "x": ' + "[" * 100_000 + "]" * 100_000 + "}"
    (tmp_path / "a.json").write_text("[" + ",".join([json.dumps(rec(1)), deep, json.dumps(rec(3))]) + "]")
    r = ingest(tmp_path / "a.json", wh)
    assert r.lines_read == r.ingested + r.quarantined + r.duplicates == 3
    assert {"r1", "r3"} <= {i for (i,) in wh.execute("SELECT id FROM task_logs").fetchall()}
