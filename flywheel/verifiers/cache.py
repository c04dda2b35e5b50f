"""The verdict cache: a DuckDB table keyed by (task id, response hash, verifier, verifier version).

Re-scoring a response is a lookup; bumping a verifier's `version` (the code verifier's
includes the harness hash) makes every older verdict a miss. The response hash covers the
task's content too (`common.response_hash`), so a task re-issued under the same id with other
tests never reuses a stale verdict. Verdicts marked `cacheable=False` (timeouts, which depend on
load) are not stored.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import duckdb

from flywheel.verifiers.verdict import Verdict
from flywheel.warehouse import connect
from flywheel.warehouse.tables import VERDICT_CACHE_DDL

Key = tuple[str, str, str, str]
"""(task_id, response_hash, verifier, verifier_version)."""


def cacheable(v: Verdict) -> bool:
    return v.details.get("cacheable", True) is not False and v.details.get("error") is None


class VerdictCache:
    """Thread-safe get/put over one DuckDB connection (or a warehouse file path)."""

    def __init__(self, con: duckdb.DuckDBPyConnection | str | Path) -> None:
        self._own = not isinstance(con, duckdb.DuckDBPyConnection)
        self.con = connect(con) if self._own else con
        self._lock = threading.Lock()
        with self._lock:
            self.con.execute(VERDICT_CACHE_DDL)  # a connection handed in may predate the table
        self.hits = 0
        self.misses = 0

    def get_many(self, keys: Iterable[Key]) -> dict[Key, Verdict]:
        keys = list(keys)
        if not keys:
            return {}
        with self._lock:
            rows = self.con.execute(
                "SELECT task_id, response_hash, verifier, verifier_version, reward, passed, reason, details "
                "FROM verdict_cache WHERE response_hash IN (SELECT unnest($h))",
                {"h": sorted({k[1] for k in keys})},
            ).fetchall()
        found = {(r[0], r[1], r[2], r[3]): Verdict(float(r[4]), bool(r[5]), r[6], json.loads(r[7] or "{}"))
                 for r in rows}
        out = {k: found[k] for k in keys if k in found}
        self.hits += len(out)
        self.misses += len(set(keys)) - len(out)
        return out

    def get(self, key: Key) -> Verdict | None:
        return self.get_many([key]).get(key)

    def put_many(self, items: Iterable[tuple[Key, Verdict]]) -> int:
        rows = [(*k, float(v.reward), bool(v.passed), v.reason, json.dumps(v.details, default=repr))
                for k, v in items if cacheable(v)]
        if not rows:
            return 0
        with self._lock:
            self.con.executemany(
                "INSERT OR REPLACE INTO verdict_cache (task_id, response_hash, verifier, verifier_version, "
                "reward, passed, reason, details) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
        return len(rows)

    def put(self, key: Key, verdict: Verdict) -> None:
        self.put_many([(key, verdict)])

    def count(self) -> int:
        with self._lock:
            return int(self.con.execute("SELECT count(*) FROM verdict_cache").fetchone()[0])

    def close(self) -> None:
        if self._own:
            self.con.close()

    def stats(self) -> dict[str, Any]:
        return {"hits": self.hits, "misses": self.misses}
