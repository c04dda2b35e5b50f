"""Ingest's floors: what DuckDB alone takes on the same Parquet files, the least any ingest can take.

Shared by bench_ingest.py and bench_mining.py, so "copy floor" and "checks floor" mean the same
in both. `src` is a DuckDB relation over the files, e.g. `read_parquet('logs/part-*.parquet')`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import duckdb

from flywheel.logs.redact import prefilter_regex

TEXT_COLS = ("messages", "outcome", "reference", "extra")


def connection(threads: int) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with `threads` threads (the target is for 2 cores)."""
    con = duckdb.connect()
    con.execute(f"SET threads = {threads}")
    return con


def parquet_relation(path: Path | str) -> str:
    """`read_parquet(...)` of a file or glob, quoted for SQL."""
    return "read_parquet('" + str(path).replace("'", "''") + "')"


def text_columns(con: duckdb.DuckDBPyConnection, src: str) -> list[str]:
    """The JSON text columns `src` has (a file may lack `reference` or `extra`)."""
    names = con.sql(f"DESCRIBE SELECT * FROM {src}").to_arrow_table()["column_name"].to_pylist()
    return [c for c in TEXT_COLS if c in names]


def copy_floor_s(src: str, dst: Path, threads: int) -> float:
    """Seconds DuckDB takes to copy `src` Parquet -> Parquet with nothing else (no validation, keys,
    dedupe or redaction): what no ingest of these files can go below on this machine."""
    con = connection(threads)
    t0 = time.perf_counter()
    con.execute(f"COPY (SELECT * FROM {src}) TO '{dst}' (FORMAT parquet, COMPRESSION snappy)")
    return time.perf_counter() - t0


def prefilter_sql(cols: Sequence[str]) -> str:
    """True where ingest's redaction prefilter matches any of `cols`."""
    return " OR ".join(f"regexp_matches({c}, '{prefilter_regex(c)}')" for c in cols)


def checks_floor_s(src: str, threads: int, validate: Sequence[str] | None = None,
                   prefilter: Sequence[str] | None = None) -> float:
    """Seconds DuckDB takes to run ingest's per-byte checks on `src` in one pass that writes nothing:
    read every column, validate the JSON columns `validate`, run the redaction prefilter over
    `prefilter` (both default to the text columns `src` has), hash the ids -- the least any ingest
    that looks at its rows can do."""
    con = connection(threads)
    validate = text_columns(con, src) if validate is None else validate
    prefilter = text_columns(con, src) if prefilter is None else prefilter
    valid = " AND ".join(f"coalesce(json_valid({c}), true)" for c in validate)
    t0 = time.perf_counter()
    con.execute(f"SELECT count(*) FILTER (WHERE {valid}), count(*) FILTER (WHERE {prefilter_sql(prefilter)}), "
                f"count(DISTINCT hash(id)) FROM {src}").fetchall()
    return time.perf_counter() - t0
