"""Facts about the warehouse's task logs, for asset metadata and the asset checks (plain SQL)."""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from flywheel.logs.schema import KNOWN_DOMAINS


def markdown_table(rows: list[tuple], headers: tuple[str, ...]) -> str:
    """A Markdown table (Dagster renders it in the UI); numbers get thousands separators."""
    def cell(v: object) -> str:
        return f"{v:,}" if isinstance(v, int) else (f"{v:.2%}" if isinstance(v, float) else str(v))

    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(v) for v in r) + " |" for r in rows]
    return "\n".join(lines)


def _scalar(con: duckdb.DuckDBPyConnection, sql: str, params: list | None = None) -> int:
    return int(con.execute(sql, params or []).fetchall()[0][0] or 0)


def null_task_ids(con: duckdb.DuckDBPyConnection) -> int:
    """Rows of `task_logs` with no usable `task_id` (NULL or empty): mining cannot group them."""
    return _scalar(con, "SELECT count(*) FROM task_logs WHERE task_id IS NULL OR task_id = ''")


def unknown_domains(con: duckdb.DuckDBPyConnection, known: tuple[str, ...] = KNOWN_DOMAINS) -> dict[str, int]:
    """Domains no verifier handles yet, with their row counts (kept by ingest, flagged here)."""
    rows = con.execute(
        "SELECT coalesce(domain, '<null>'), count(*) FROM task_logs WHERE domain IS NULL OR NOT list_contains(?, domain) "
        "GROUP BY 1 ORDER BY 2 DESC", [list(known)]
    ).fetchall()
    return {d: int(n) for d, n in rows}


@dataclass(frozen=True)
class QuarantineRate:
    """Share of distinct input lines that were quarantined (over the whole warehouse or one day)."""

    quarantined: int
    clean: int

    @property
    def rate(self) -> float:
        total = self.quarantined + self.clean
        return self.quarantined / total if total else 0.0


def quarantine_rate(con: duckdb.DuckDBPyConnection, log_date: str | None = None) -> QuarantineRate:
    """Quarantined lines / (quarantined + clean rows); re-ingests count once (both tables dedupe)."""
    where = " WHERE log_date = ?::DATE" if log_date else ""
    p = [log_date] if log_date else []
    return QuarantineRate(quarantined=_scalar(con, f"SELECT count(*) FROM quarantine{where}", p),
                          clean=_scalar(con, f"SELECT count(*) FROM task_logs{where}", p))


def quarantine_by_file(con: duckdb.DuckDBPyConnection, log_date: str | None = None) -> list[tuple[str, int, int]]:
    """(source file, quarantined lines, clean rows) of every file read (of one day), worst rate first: a broken
    file shows even when the day's other files dilute it."""
    where = " WHERE log_date = ?::DATE" if log_date else ""
    p = [log_date] if log_date else []
    rows = con.execute(f"""
        WITH q AS (SELECT source_file, count(*) AS n FROM quarantine{where} GROUP BY 1),
             c AS (SELECT source_file, count(*) AS n FROM task_logs{where} GROUP BY 1)
        SELECT coalesce(q.source_file, c.source_file), coalesce(q.n, 0), coalesce(c.n, 0)
        FROM q FULL OUTER JOIN c ON q.source_file = c.source_file
        ORDER BY coalesce(q.n, 0) / greatest(coalesce(q.n, 0) + coalesce(c.n, 0), 1) DESC, 1""", p + p).fetchall()
    return [(str(f), int(qn), int(cn)) for f, qn, cn in rows]


def summarize(con: duckdb.DuckDBPyConnection) -> dict:
    """Counts for the `task_logs` asset: rows, days, domains, models, quarantine by reason."""
    rows = _scalar(con, "SELECT count(*) FROM task_logs")
    by_domain = con.execute(
        "SELECT domain, count(*), count(DISTINCT task_id), round(avg(CASE WHEN outcome->>'$.passed' = 'true' "
        "THEN 1.0 WHEN outcome->>'$.passed' = 'false' THEN 0.0 END), 4) FROM task_logs GROUP BY 1 ORDER BY 2 DESC"
    ).fetchall()
    by_kind = con.execute("SELECT kind, count(*) FROM quarantine GROUP BY 1 ORDER BY 2 DESC").fetchall()
    days = con.execute("SELECT min(log_date), max(log_date), count(DISTINCT log_date) FROM task_logs").fetchall()[0]
    q = quarantine_rate(con)
    return {
        "rows": rows,
        "tasks": _scalar(con, "SELECT count(DISTINCT task_id) FROM task_logs"),
        "models": _scalar(con, "SELECT count(DISTINCT model) FROM task_logs"),
        "days": int(days[2] or 0),
        "first_day": str(days[0]) if days[0] else None,
        "last_day": str(days[1]) if days[1] else None,
        "redactions": _scalar(con, "SELECT coalesce(sum(redactions), 0) FROM task_logs"),
        "quarantined": q.quarantined,
        "quarantine_rate": q.rate,
        "by_domain_md": markdown_table(
            [(d, int(n), int(t), "n/a" if p is None else f"{p:.1%}") for d, n, t, p in by_domain],
            ("domain", "rows", "tasks", "production pass rate"),
        ),
        "quarantine_by_reason_md": markdown_table([(k, int(n)) for k, n in by_kind], ("reason", "lines")),
    }


QUARANTINE_COLUMNS = ("file", "line", "log_date", "field", "kind", "reason", "run_id")
"""What `quarantined_lines` returns for each line: where it was, what is wrong with it and which run saw it."""


def quarantined_lines(con: duckdb.DuckDBPyConnection, limit: int, *, files: list[str] | None = None,
                      log_date: str | None = None) -> tuple[list[dict], int]:
    """The `limit` most recently quarantined lines (of the `source_file`s `files`, of one day), newest run first,
    each file in line order; and how many match in all."""
    conds, p = [], []
    if files is not None:
        conds.append("list_contains(?, source_file)")
        p.append(list(files))
    if log_date:
        conds.append("log_date = ?::DATE")
        p.append(log_date)
    where = f" WHERE {' AND '.join(conds)}" if conds else ""
    total = _scalar(con, f"SELECT count(*) FROM quarantine{where}", p)
    rows = con.execute(f"""
        WITH q AS (SELECT *, max(quarantined_at) OVER (PARTITION BY run_id) AS run_at FROM quarantine{where})
        SELECT source_file, source_line, log_date, field, kind, reason, run_id FROM q
        ORDER BY run_at DESC, run_id, source_file, source_line, kind LIMIT ?""", [*p, limit]).fetchall()
    out = [dict(zip(QUARANTINE_COLUMNS, r, strict=True)) for r in rows]
    for r in out:
        r["log_date"] = str(r["log_date"]) if r["log_date"] is not None else None
    return out, total


def quarantine_of_files(con: duckdb.DuckDBPyConnection, files: list[str]) -> list[tuple[str, int, int]]:
    """(source file, quarantined lines, clean rows) of each of `files` (`source_file` names) with quarantined
    lines, as the warehouse holds them (all runs; re-ingests count once), worst rate first."""
    rows = con.execute("""
        WITH q AS (SELECT source_file, count(*) AS n FROM quarantine WHERE list_contains(?, source_file) GROUP BY 1),
             c AS (SELECT source_file, count(*) AS n FROM task_logs
                   WHERE source_file IN (SELECT source_file FROM q) GROUP BY 1)
        SELECT q.source_file, q.n, coalesce(c.n, 0) FROM q LEFT JOIN c USING (source_file)
        ORDER BY q.n / (q.n + coalesce(c.n, 0)) DESC, 1""", [list(files)]).fetchall()
    return [(str(f), int(qn), int(cn)) for f, qn, cn in rows]
