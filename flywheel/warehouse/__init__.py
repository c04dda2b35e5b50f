"""The warehouse: one DuckDB file (plus day-partitioned Parquet behind `task_logs`) that every stage shares.

`connect(path)` is the one way to open it; `tables` declares every persistent table once, with its
migrations. Nothing else in the library calls `duckdb.connect` (tests/project/test_layering.py).
"""

from flywheel.warehouse.connection import connect, prepare, scratch
from flywheel.warehouse.session import configure, database_path

__all__ = ["configure", "connect", "database_path", "prepare", "scratch"]
