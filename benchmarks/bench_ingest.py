"""Ingest throughput: N synthetic log rows as Parquet (or JSONL, `--format jsonl`) -> DuckDB warehouse.

Prints rows/s and peak RSS; the last line is one JSON object with the measured figures.
Target on a 2-core box: >= 1 million rows/s, peak RSS < 2 GiB.

    python benchmarks/bench_ingest.py --rows 1000000 [--format jsonl]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _floors import TEXT_COLS, checks_floor_s, connection, copy_floor_s, parquet_relation  # noqa: E402

from flywheel.logs.ingest import ingest  # noqa: E402
from flywheel.logs.synthetic import generate_parquet_logs  # noqa: E402
from flywheel.warehouse import connect  # noqa: E402


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def cpu_s() -> float:
    """Process CPU seconds (all threads): on a shared box, rows per CPU-second is the fairer figure."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def to_jsonl(src: Path, dst: Path, threads: int) -> None:
    """Rewrite the generated Parquet as JSONL logs, one object per line, the JSON columns nested
    (as a production logger writes them), not as quoted strings."""
    con = connection(threads)
    cols = con.sql(f"DESCRIBE SELECT * FROM read_parquet('{src}')").to_arrow_table()["column_name"].to_pylist()
    sel = ", ".join(f"json({c}) AS {c}" if c in TEXT_COLS else
                    (f"strftime({c}, '%Y-%m-%dT%H:%M:%S.%fZ') AS {c}" if c == "timestamp" else c) for c in cols)
    con.execute(f"COPY (SELECT {sel} FROM read_parquet('{src}')) TO '{dst}' (FORMAT json)")


def jsonl_copy_floor_s(src: Path, dst: Path, threads: int) -> float:
    """Seconds DuckDB takes to parse the JSONL file and write it as Parquet, with nothing else."""
    con = connection(threads)
    t0 = time.perf_counter()
    con.execute(f"COPY (SELECT * FROM read_json('{src}', format = 'newline_delimited')) TO '{dst}' "
                "(FORMAT parquet, COMPRESSION snappy)")
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2, help="DuckDB threads (the target is for 2 cores)")
    ap.add_argument("--format", choices=["parquet", "jsonl"], default="parquet", help="the input logs' format")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "logs" / "part-0.parquet"
        t0 = time.perf_counter()
        # generate in a child process, so this process's peak RSS measures ingest alone
        with multiprocessing.get_context("spawn").Pool(1) as pool:
            pool.apply(generate_parquet_logs, (src, args.rows, args.seed))
            if args.format == "jsonl":
                pool.apply(to_jsonl, (src, src.with_suffix(".jsonl"), args.threads))
                src.unlink()
                src = src.with_suffix(".jsonl")
        gen_s = time.perf_counter() - t0
        con = connect(Path(d) / "warehouse.duckdb")
        con.execute(f"SET threads = {args.threads}")
        t0, c0 = time.perf_counter(), cpu_s()
        rep = ingest(src, con)
        secs, cpu = time.perf_counter() - t0, cpu_s() - c0
        t0 = time.perf_counter()
        rep2 = ingest(src, con)  # idempotent re-ingest: everything is a duplicate
        re_secs = time.perf_counter() - t0
        con.close()
        size_mib = src.stat().st_size / 2**20
        # the floor, in a child process (its memory is not ingest's): DuckDB copying the same file
        with multiprocessing.get_context("spawn").Pool(1) as pool:
            if args.format == "jsonl":
                copy_s = pool.apply(jsonl_copy_floor_s, (src, Path(d) / "copy.parquet", args.threads))
                checks_s = None
            else:
                copy_s = pool.apply(copy_floor_s, (parquet_relation(src), Path(d) / "copy.parquet", args.threads))
                checks_s = pool.apply(checks_floor_s, (parquet_relation(src), args.threads))
    rate = rep.lines_read / secs
    print(f"generated {args.rows:,} rows ({size_mib:.0f} MiB {args.format}) in {gen_s:.1f} s")
    print(f"ingest:    {rate:>12,.0f} rows/s  ({secs:.2f} s; ingested {rep.ingested:,}, "
          f"quarantined {rep.quarantined:,}, redactions {rep.redactions:,})")
    print(f"re-ingest: {rep2.lines_read / re_secs:>12,.0f} rows/s  ({re_secs:.2f} s; duplicates {rep2.duplicates:,})")
    copy_rate = args.rows / copy_s
    what = "Parquet -> Parquet" if args.format == "parquet" else "JSONL (read_json) -> Parquet"
    print(f"floor:     {copy_rate:>12,.0f} rows/s  (DuckDB copying the file {what} alone, {copy_s:.2f} s; "
          f"ingest = {rate / copy_rate:.2f}x of it)")
    checks_rate = args.rows / checks_s if checks_s else None
    if checks_rate:
        print(f"checks:    {checks_rate:>12,.0f} rows/s  (ingest's checks alone in one DuckDB pass writing nothing: "
              f"read, validate JSON, prefilter, hash ids; {checks_s:.2f} s)")
    per_cpu = rep.lines_read / cpu
    print(f"CPU:       {cpu:.2f} CPU-s = {per_cpu:,.0f} rows per CPU-second "
          f"(x{args.threads} cores = {per_cpu * args.threads:,.0f} rows/s if the cores were not shared)")
    print(f"target 1,000,000 rows/s: {rate / 1e6:.2f}x measured, {per_cpu * args.threads / 1e6:.2f}x CPU-bound estimate; "
          f"peak RSS {peak_rss_mib():.0f} MiB (target < 2048)")
    out = {"rows": args.rows, "format": args.format, "mib": round(size_mib), "ingest_rows_per_s": round(rate), "reingest_rows_per_s": round(rep2.lines_read / re_secs),
           "ingest_rows_per_cpu_s": round(per_cpu),
           "copy_floor_rows_per_s": round(copy_rate), "ingest_vs_copy_floor": round(rate / copy_rate, 2),
           "checks_floor_rows_per_s": round(checks_rate) if checks_rate else None, "peak_rss_mib": round(peak_rss_mib(), 1),
           "redactions": rep.redactions, "load_avg_1m": round(os.getloadavg()[0], 2)}
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
