"""Writing the `task_logs` Parquet part files of one ingest run (the files behind the `task_logs` view)."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
from concurrent.futures import Executor, wait
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from flywheel.logs.arrow_ops import pieces
from flywheel.warehouse.tables import TASK_LOGS_ARROW

_STATS_COLS = ["id", "timestamp", "task_id", "domain", "model", "log_date", "source_file", "source_line",
               "ingested_at", "redactions"]

Parts = list[tuple[Path, Path]]
"""One batch's files: (temporary name, final name) each."""


def by_day(table: pa.Table) -> list[tuple[dt.date, pa.Table]]:
    """`table`'s rows grouped by `log_date`, each day's rows in their batch order: zero-copy slices when
    the days come in runs (one day, or logs written in time order), else one filter per day (one sort
    and `take` measured no faster and held the batch twice)."""
    days = table["log_date"]
    codes = (days.combine_chunks() if isinstance(days, pa.ChunkedArray) else days).cast(pa.int32())
    codes = codes.to_numpy(zero_copy_only=False)
    if not len(codes):
        return []
    cuts = np.flatnonzero(codes[1:] != codes[:-1]) + 1
    if len(np.unique(codes[np.concatenate([[0], cuts])])) < len(cuts) + 1:  # a day comes back: not in runs
        return [(day, table.filter(pc.equal(days, pa.scalar(day, pa.date32()))))
                for day in pc.unique(days).sort().to_pylist()]
    starts, ends = np.concatenate([[0], cuts]), np.concatenate([cuts, [len(codes)]])
    first = days.take(pa.array(starts)).to_pylist()
    return [(day, table.slice(a, b - a)) for day, a, b in zip(first, starts.tolist(), ends.tolist(), strict=True)]


class PartWriter:
    """Parquet files of one run: `<task_logs dir>/<YYYY-MM-DD>/part-<run>-<seq>.parquet`, per batch and
    day one file for each slice of >= 64k rows, encoded in parallel threads, each written under a
    temporary name and renamed only when all files of the batch are complete, so the `task_logs` view
    never sees a half-written batch. The encoding threads are `workers` threads of the caller's `pool`.

    `encode` (any one thread at a time) and `commit` are apart so a batch can be encoded while the
    next one is validated; `write` does both."""

    def __init__(self, folder: Path, run_id: str, pool: Executor, workers: int):
        self.folder, self.run_id = folder, run_id
        self.pool, self.workers = pool, workers
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

    def encode(self, table: pa.Table) -> Parts:
        """Write one batch of `task_logs` rows (TASK_LOGS_ARROW columns) under temporary names, invisible
        to the view until `commit`; on an error nothing of it is left."""
        jobs: list[tuple[pa.Table, Path]] = []
        for day, part in by_day(table):
            for off, ln in pieces(len(part), self.workers, min_rows=65_536):
                path = self.folder / day.isoformat() / f"part-{self.run_id}-{self._seq:05d}.parquet"
                path.parent.mkdir(parents=True, exist_ok=True)
                self._seq += 1
                jobs.append((part.slice(off, ln), path))
        futures = [self.pool.submit(self._encode, j) for j in jobs]
        wait(futures)
        parts = [(path.with_name(f".{path.name}.tmp"), path) for _, path in jobs]
        failed = [f.exception() for f in futures if f.exception() is not None]
        if failed:  # nothing of this batch becomes visible
            self.drop(parts)
            raise failed[0]
        return parts

    def commit(self, parts: Parts) -> None:
        """Make an encoded batch's files visible (renamed to their final names)."""
        for tmp, path in parts:
            os.replace(tmp, path)
            self.paths.append(path)

    @staticmethod
    def drop(parts: Parts) -> None:
        """Delete an encoded batch that will not be committed."""
        for tmp, _ in parts:
            with contextlib.suppress(OSError):
                tmp.unlink()

    def write(self, table: pa.Table) -> None:
        """Write one batch of `task_logs` rows: all its files appear, or none."""
        self.commit(self.encode(table))

    def discard(self) -> None:
        """Delete every file this run wrote (a failed run leaves nothing behind)."""
        for p in self.paths:
            p.unlink(missing_ok=True)
