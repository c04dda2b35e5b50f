"""The warehouse (DuckDB via dagster-duckdb) and where raw logs live (a URI template)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import dagster as dg
import duckdb
from dagster_duckdb import DuckDBResource
from pydantic import Field

WAREHOUSE_POOL = "duckdb_warehouse"
"""Dagster concurrency pool for assets that open the warehouse: DuckDB allows one writing process
per file, so steps that hold a connection for long (ingest, mining) take turns (dagster.yaml:
`pools.default_limit: 1`) instead of failing on the file lock."""


class LogSourceResource(dg.ConfigurableResource):
    """Where one day of raw task logs is: a file, folder or URI with `{date}` in it.

    Empty (the default) means the local demo folder `$FLYWHEEL_HOME/raw_logs/{date}/`. Point it at
    your own logs with e.g. `s3://my-bucket/llm-logs/{date}/` (credentials come from the
    environment, as pyarrow's filesystems read them) or `/data/logs/{date}.jsonl`.
    """

    uri_template: str = Field(default="", description="file/folder/URI with {date} (YYYY-MM-DD); empty = local raw_logs")
    max_field_mib: float = Field(default=1.0, description="records with a larger field are quarantined")

    def uri_for(self, date: str) -> str:
        if not self.uri_template:
            from flywheel.paths import FlywheelPaths

            return str(FlywheelPaths.from_env().raw_logs / date)
        return self.uri_template.format(date=date)


@contextmanager
def warehouse_connection(resource: DuckDBResource) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection from the Dagster resource with the flywheel's session settings and tables."""
    from pathlib import Path

    from flywheel.warehouse import configure, ensure_tables

    if resource.database != ":memory:":
        Path(resource.database).parent.mkdir(parents=True, exist_ok=True)
    with resource.get_connection() as con:
        configure(con)
        ensure_tables(con)
        yield con


def default_resources() -> dict[str, Any]:
    from flywheel.paths import FlywheelPaths

    return {
        "duckdb": DuckDBResource(database=str(FlywheelPaths.from_env().warehouse)),
        "log_source": LogSourceResource(),
    }
