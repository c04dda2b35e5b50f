"""Part files per day: a batch's rows grouped by `log_date` without losing, repeating or reordering any."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa

from flywheel.logs.writer import by_day


def _batch(days: list[int], chunk: int = 3) -> pa.Table:
    base = dt.date(2026, 12, 1)
    t = pa.table({"log_date": pa.array([base + dt.timedelta(d) for d in days], pa.date32()),
                  "line": pa.array(np.arange(len(days))), "text": pa.array([f"row {i}" for i in range(len(days))])})
    return pa.Table.from_batches(t.to_batches(max_chunksize=chunk))


def test_interleaved_days_are_grouped_in_batch_order_within_each_day():
    days = [3, 1, 3, 2, 1, 1, 3, 2]
    out = by_day(_batch(days))
    assert [d.day for d, _ in out] == [2, 3, 4]  # 2026-12-01 + (1, 2, 3)
    for day, part in out:
        want = [i for i, d in enumerate(days) if d == day.day - 1]
        assert part["line"].to_pylist() == want
        assert part["text"].to_pylist() == [f"row {i}" for i in want]
        assert set(part["log_date"].to_pylist()) == {day}


def test_days_in_runs_are_zero_copy_slices():
    t = _batch([0, 0, 0, 1, 1, 2])
    out = by_day(t)
    assert [(d.day, len(p)) for d, p in out] == [(1, 3), (2, 2), (3, 1)]
    assert sum(len(p) for _, p in out) == len(t)
    text = t["text"].chunks[0].buffers()[2].address  # the slice reads the batch's own buffer
    assert out[0][1]["text"].chunks[0].buffers()[2].address == text


def test_one_day_and_empty():
    t = _batch([5] * 4)
    [(day, part)] = by_day(t)
    assert day == dt.date(2026, 12, 6) and part.equals(t)
    assert by_day(t.slice(0, 0)) == []
