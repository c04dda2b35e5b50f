"""bench_mining.py's data: realistic SIMULATED log rows tiled to millions, as Parquet files.

A few tens of thousands of records from the demo traffic generator (`flywheel.world.traffic`: real
tracebacks and tool-call conversations) are tiled, vectorized, to the requested size with fresh ids
and timestamps spread over 30 days. (`flywheel.logs.synthetic` is faster to build but its rows carry
no taxonomy to mine: one message shape, no tracebacks, no tool calls.)

By default each row is then made distinct, as a real log's rows are (`distinct_rows`): tiled as they are,
each messages and outcome text would repeat ~40 times in a 1M-row file, and a Parquet writer that
dictionary-encodes repeated strings (DuckDB's, in the copy floor) writes ~7x less of them than real logs
would make it write. `tiled=True` keeps the exact repeats (the benchmarks' data before 2026-12-06).
"""

from __future__ import annotations

import json
from datetime import date, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

COLUMNS = ("id", "timestamp", "task_id", "domain", "model", "messages", "outcome", "reference", "extra")


def make_templates(n: int, seed: int) -> pa.Table:
    """`n` realistic records (a bigger task universe than the demo default), as string columns."""
    # imported here: the measured worker processes import this module too, and only the driver generates
    from flywheel.world.traffic import TrafficConfig, generate_records

    cfg = TrafficConfig(universe=(("math", 6000), ("code", 400), ("agent", 4000)), repeats=2.0)
    cols: dict[str, list] = {c: [] for c in COLUMNS}
    days = 4
    for k in range(days):
        for r in generate_records(date(2026, 11, 1) + timedelta(days=k), n // days, seed, config=cfg):
            for c in ("id", "timestamp", "task_id", "domain", "model"):
                cols[c].append(r[c])
            for c in ("messages", "outcome", "reference"):
                cols[c].append(json.dumps(r[c], ensure_ascii=False))
            cols["extra"].append(json.dumps({"simulated": True, "sim": r["sim"]}))
    return pa.table({c: pa.array(v, pa.string()) for c, v in cols.items()})


def distinct_rows(t: pa.Table) -> pa.Table:
    """`t` with each row's messages and outcome made its own: a system line naming the request (its `id`)
    before the conversation, and the request id as the outcome's first field. Mining's results do not
    change (measured: the same failures, taxonomy and pool as the tiled rows)."""
    ids = t["id"]
    msgs, outc = t["messages"], t["outcome"]
    sys_line = pc.binary_join_element_wise('{"role": "system", "content": "request ', ids, '"}', "")
    msgs = pc.if_else(pc.equal(msgs, "[]"), pc.binary_join_element_wise("[", sys_line, "]", ""),
                      pc.binary_join_element_wise("[", sys_line, ", ", pc.utf8_slice_codeunits(msgs, 1), ""))
    rid = pc.binary_join_element_wise('{"request_id": "', ids, '"', "")
    outc = pc.if_else(pc.equal(outc, "{}"), pc.binary_join_element_wise(rid, "}", ""),
                      pc.binary_join_element_wise(rid, ", ", pc.utf8_slice_codeunits(outc, 1), ""))
    t = t.set_column(t.schema.get_field_index("messages"), "messages", msgs)
    return t.set_column(t.schema.get_field_index("outcome"), "outcome", outc)


SHAPE_FILE = ".shape"
"""Names the rows' shape (`distinct` or `tiled`) in the data folder, so a reused folder is the shape asked."""


def shape_name(tiled: bool) -> str:
    """What `SHAPE_FILE` holds for rows generated with `tiled`."""
    return "tiled" if tiled else "distinct"


def data_shape(folder: Path) -> str | None:
    """The shape `generate_parquet` wrote into `folder`, or None."""
    f = folder / SHAPE_FILE
    return f.read_text().strip() if f.exists() else None


def generate_parquet(folder: Path, rows: int, seed: int, n_templates: int = 24_000, chunk: int = 500_000,
                     rows_per_file: int = 1_000_000, tiled: bool = False) -> Path:
    """Tile the templates to `rows` rows (random order) in `folder/part-NNNN.parquet` files of
    `rows_per_file` rows: new ids, timestamps over 30 days, two model versions; each row made distinct
    (`distinct_rows`) unless `tiled`."""
    templates = make_templates(n_templates, seed)
    rng = np.random.default_rng(seed)
    t0 = np.datetime64("2026-11-01T00:00:00", "us")
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("part-*.parquet"):
        old.unlink()
    writer = None
    try:
        for start in range(0, rows, chunk):
            m = min(chunk, rows - start)
            idx = rng.integers(0, templates.num_rows, m)
            t = templates.take(pa.array(idx))
            offs = np.sort(rng.integers(0, 30 * 86_400_000_000, m)).astype("timedelta64[us]")
            # the first 20 days were served by v1, the rest by v2 (so pass rates are per model version)
            model = np.where(offs < np.timedelta64(20 * 86_400_000_000, "us"), "simulated-prod:v1",
                             "simulated-prod:v2")
            ids = pa.array([f"bench-{seed}-{i:09d}" for i in range(start, start + m)], pa.string())
            t = t.set_column(t.schema.get_field_index("id"), "id", ids)
            t = t.set_column(t.schema.get_field_index("timestamp"), "timestamp",
                             pa.array(t0 + offs, pa.timestamp("us", tz="UTC")))
            t = t.set_column(t.schema.get_field_index("model"), "model", pa.array(model, pa.string()))
            if not tiled:
                t = distinct_rows(t)
            if start % rows_per_file == 0:
                if writer is not None:
                    writer.close()
                writer = pq.ParquetWriter(folder / f"part-{start // rows_per_file:04d}.parquet", t.schema,
                                          compression="zstd")
            writer.write_table(t, row_group_size=131_072)
    finally:
        if writer is not None:
            writer.close()
    (folder / SHAPE_FILE).write_text(shape_name(tiled))
    return folder


def parquet_rows(folder: Path) -> int:
    return sum(pq.ParquetFile(f).metadata.num_rows for f in sorted(folder.glob("part-*.parquet")))
