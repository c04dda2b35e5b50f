"""Failure mining over `task_logs`: pass rates, the failure taxonomy, difficulty history.

Everything is set-based DuckDB SQL over the warehouse, two scans of `task_logs`: one parses every
outcome for attempts/passes per (task, model, day) and the distinct error texts of the failing
records; one streams the failing records into `failure_cases`, parsing their conversations and
looking the per-distinct error results up. The rest works on their small results.
Tables written (replaced each run unless noted):

- `task_stats(task_id, domain, model, attempts, passes, pass_rate, first_seen, last_seen, last_id, cost_usd,
  tokens)`: `cost_usd` / `tokens` are the mean per record of the records that carry them (`outcome.cost_usd`,
  `outcome.prompt_tokens + completion_tokens`: what production paid, as traces record it), NULL when none does
- `domain_stats(domain, model, attempts, passes, pass_rate, tasks, cost_usd_per_task, cost_usd_total)`
- `failure_cases`: one row per failing record with its class, exception type, traceback signature, the
  error's last line and the assistant's reply (the full record stays in `task_logs`, same `id`)
- `failure_summary(domain, model, failure_type, n, tasks)`
- `failure_signatures(domain, model, exception_type, signature_hash, signature, n, tasks, example_id)`
- `difficulty_history(task_id, domain, model, log_date, attempts, passes, updated_at)`: upserted per (model, day),
  never replaced, so it outlives pruned logs and spans base models.

A record's pass/fail is `outcome.passed`, else `outcome.status == "success"`; records with
neither are unjudged and count nowhere.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

import duckdb

from flywheel.mining.config import MiningConfig
from flywheel.mining.taxonomy import (
    FAILURE_TYPES,
    FORMAT_ERROR_RE,
    INVALID_TOOL_RE,
    MAX_TEXT_CHARS,
    REFUSAL_MAX_CHARS,
    REFUSAL_RE,
    TIMEOUT_RE,
    _sql_str,
    sql_exception_type_of_line,
    sql_last_line,
    sql_missing_answer,
    sql_signature,
)
from flywheel.tracebacks import WRONG_ANSWER_EXCEPTION
from flywheel.warehouse.session import session_settings
from flywheel.warehouse.tables import DIFFICULTY_HISTORY_DDL

_MSG_SCHEMA = '[{"role":"VARCHAR","content":"VARCHAR","tool_calls":"JSON"}]'


@dataclass
class FailureReport:
    """What `mine_failures` found; `by_domain_type[domain][failure_type] = n`."""

    records: int = 0
    judged: int = 0
    passes: int = 0
    failures: int = 0
    tasks: int = 0
    models: list[str] = field(default_factory=list)
    by_domain_type: dict[str, dict[str, int]] = field(default_factory=dict)
    pass_rate_by_domain: dict[str, float] = field(default_factory=dict)
    cost_usd_per_task_by_domain: dict[str, float] = field(default_factory=dict)  # mean over the tasks with a cost
    cost_usd_total: float = 0.0  # what the logged records cost production (outcome.cost_usd), all models
    signatures: int = 0
    history_rows: int = 0
    seconds: float = 0.0
    step_seconds: dict[str, float] = field(default_factory=dict)
    step_cpu_seconds: dict[str, float] = field(default_factory=dict)  # all threads: more than wall when parallel

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def markdown(self) -> str:
        """Counts by domain and failure type, as a Markdown table (for the Dagster UI)."""
        head = "| domain | pass rate | " + " | ".join(FAILURE_TYPES) + " | failures | cost/task (USD) |"
        rows = [head, "|" + " --- |" * (len(FAILURE_TYPES) + 4)]
        for d in sorted(self.by_domain_type):
            c = self.by_domain_type[d]
            pr = self.pass_rate_by_domain.get(d)
            cost = self.cost_usd_per_task_by_domain.get(d)
            cells = [d, "-" if pr is None else f"{pr:.3f}", *(str(c.get(t, 0)) for t in FAILURE_TYPES),
                     str(sum(c.values())), "-" if cost is None else f"{cost:.6f}"]
            rows.append("| " + " | ".join(cells) + " |")
        tot = {t: sum(c.get(t, 0) for c in self.by_domain_type.values()) for t in FAILURE_TYPES}
        rows.append("| **all** | " + (f"{self.passes / self.judged:.3f}" if self.judged else "-") + " | "
                    + " | ".join(str(tot[t]) for t in FAILURE_TYPES) + f" | {self.failures} | "
                    + (f"{self.cost_usd_total:.6f} in all" if self.cost_usd_total else "-") + " |")
        return "\n".join(rows)


_PASSED = "CASE o[1] WHEN 'true' THEN true WHEN 'false' THEN false ELSE lower(o[2]) = 'success' END"
"""`taxonomy.SQL_PASSED` over the parsed fields (`o[1]` passed, `o[2]` status): true, false, or NULL (unjudged)."""


def _outcomes_sql(fields: tuple[str, ...], extra: str = "") -> str:
    """Every record of `task_logs` with its outcome's `$.passed`, `$.status` and `fields` extracted in ONE JSON
    parse, as `o` (`o[3]` is `fields[0]`), plus columns `extra`. Each path costs: extract only what is used."""
    paths = ", ".join(_sql_str(f) for f in ("$.passed", "$.status", *fields))
    return f"""SELECT id, task_id, domain, model, coalesce(log_date, CAST(timestamp AS DATE)) AS log_date, timestamp,
                      {extra} json_extract_string(outcome, [{paths}]) AS o
               FROM task_logs"""


def daily_sql() -> str:
    """`_mining_groups`: two aggregations of one scan (one outcome parse per record; DuckDB streams the scan to
    both). Rows with `by_error = 1` are attempts/passes/cost per (task, model, day); rows with `by_error = 0`
    are the DISTINCT error texts of the failing records, which `failure_cases` classifies once each (a second
    scan for them cost 1.8 CPU-s at 5M rows, this aggregation ~0.3)."""
    return f"""
        CREATE OR REPLACE TEMP TABLE _mining_groups AS
        WITH r AS (
            SELECT id, task_id, domain, model, log_date, timestamp, {_PASSED} AS passed,
                   TRY_CAST(o[3] AS DOUBLE) AS cost_usd, TRY_CAST(o[4] AS DOUBLE) + TRY_CAST(o[5] AS DOUBLE) AS tokens,
                   CASE WHEN NOT {_PASSED} THEN o[6] END AS error
            FROM ({_outcomes_sql(("$.cost_usd", "$.prompt_tokens", "$.completion_tokens", "$.error"))})
        )
        SELECT 1 AS by_error, task_id, any_value(domain) AS domain, model, log_date,
               count(*) AS records, count(passed) AS attempts, count(*) FILTER (WHERE passed) AS passes,
               min(timestamp) AS first_seen, max(timestamp) AS last_seen, arg_max(id, timestamp) AS last_id,
               sum(cost_usd) AS cost_usd, count(cost_usd) AS costed, sum(tokens) AS tokens, count(tokens) AS tokened
        FROM r GROUP BY task_id, model, log_date
        UNION ALL BY NAME
        SELECT 0 AS by_error, error FROM r WHERE error IS NOT NULL GROUP BY error"""


def _setting(con: duckdb.DuckDBPyConnection, name: str) -> str | None:
    """A DuckDB setting's current value, or None where this DuckDB version lacks it."""
    try:
        return str(con.execute(f"SELECT current_setting('{name}')").fetchall()[0][0] or "")
    except duckdb.Error:
        return None


def errors_sql() -> str:
    """`_mining_errors`: once per distinct error text of a failing record, its last line (as stored: cut to
    `MAX_TEXT_CHARS`), exception type, the taxonomy's error regexes and the traceback signature."""
    exc = sql_exception_type_of_line("line")
    return f"""
        CREATE OR REPLACE TEMP TABLE _mining_errors AS
        SELECT error, left(line, {MAX_TEXT_CHARS}) AS error_line, {exc} AS exception_type,
               regexp_matches(error, {_sql_str(TIMEOUT_RE)}) AS timeout_error,
               regexp_matches(error, {_sql_str(INVALID_TOOL_RE)}) AS invalid_tool_error,
               regexp_matches(error, {_sql_str(FORMAT_ERROR_RE)}) AS format_error,
               signature, substr(md5(signature), 1, 16) AS signature_hash
        FROM (SELECT error, {sql_last_line("error")} AS line,
                     CASE WHEN error <> '' THEN {sql_signature("error")} END AS signature
              FROM _mining_groups WHERE by_error = 0)"""


def failure_cases_sql() -> str:
    """The `failure_cases` statement: one streaming scan of `task_logs`, the per-row work on failing records only.

    Every failing record's class is a function of its domain, outcome fields, error text and
    assistant reply. Per row the outcome's fields are extracted in one JSON parse; a failing
    record's conversation is parsed once more for its assistant reply and tool-call count, and
    the reply regexes run only where a rule reads them (the refusal regex on short replies
    without tool calls, the answer-form regexes on their domain's records). Error texts repeat
    (the same bug, the same timeout), so their regexes and signature run once per DISTINCT error
    text (`_mining_errors`) and records look them up by the text itself (an exact join).
    Conversations rarely repeat in real logs, so they are not deduplicated: a DISTINCT over the
    conversation text and a join on it cost 24 s at 5M distinct rows, this inline parse 6 s.
    Nothing is materialized between the scan and the table written (keeping the failing records
    in between spilled ~340 MB at 5M rows under a 1 GB memory limit).

    Run it with the `filter_pushdown` optimizer off (`mine_failures` does): pushed down, the WHERE
    over `o` would be rewritten into one JSON parse per reference to `o`.
    """
    wrong = _sql_str(WRONG_ANSWER_EXCEPTION)
    return f"""
        CREATE OR REPLACE TABLE failure_cases AS
        WITH f AS (
            SELECT id, timestamp, log_date, task_id, domain, model, lower(o[2]) AS status, o[3] AS error,
                   TRY_CAST(o[4] AS BIGINT) AS tests_run, TRY_CAST(o[5] AS BIGINT) AS tests_passed,
                   list_filter(from_json(messages, '{_MSG_SCHEMA}'), lambda x: x.role = 'assistant') AS am
            FROM ({_outcomes_sql(("$.error", "$.tests.run", "$.tests.passed"), "messages,")}) WHERE NOT {_PASSED}
        ), fr AS (
            SELECT * EXCLUDE (am),
                   array_to_string(list_transform(am, lambda x: coalesce(x.content, '')), E'\\n') AS response,
                   coalesce(list_sum(list_transform(am, lambda x: coalesce(json_array_length(x.tool_calls), 0))), 0)
                       AS n_tool_calls
            FROM f
        ), c AS (
            SELECT fr.* EXCLUDE (error), coalesce(fr.response, '') AS r, de.error_line, de.exception_type,
                   de.signature AS error_signature, de.signature_hash AS error_signature_hash,
                   de.timeout_error, de.invalid_tool_error, de.format_error
            FROM fr LEFT JOIN _mining_errors de ON fr.error = de.error
        ), k AS (
            SELECT *,
                   -- `taxonomy.sql_failure_type` (same rules, same order) with the error's flags looked up;
                   -- CASE evaluates a regex only for the rows that reach it
                   CASE
                     WHEN coalesce(status, '') = 'refused' OR (n_tool_calls = 0 AND length(r) <= {REFUSAL_MAX_CHARS}
                         AND regexp_matches(r, {_sql_str(REFUSAL_RE)})) THEN 'refused'
                     WHEN coalesce(status, '') = 'timeout' OR coalesce(timeout_error, false) THEN 'timeout'
                     WHEN coalesce(status, '') = 'invalid_tool_call' OR coalesce(invalid_tool_error, false)
                         THEN 'invalid_tool_call'
                     WHEN coalesce(status, '') = 'error' OR coalesce(exception_type, {wrong}) <> {wrong}
                         THEN 'runtime_error'
                     WHEN coalesce(status, '') = 'format_error' OR coalesce(format_error, false)
                       OR {sql_missing_answer("domain", "r", "n_tool_calls")} THEN 'format_error'
                     ELSE 'wrong_answer' END AS failure_type
            FROM c
        )
        SELECT id, timestamp, log_date, task_id, domain, model, failure_type, status, exception_type,
               CASE WHEN failure_type = 'runtime_error' THEN error_signature END AS signature,
               CASE WHEN failure_type = 'runtime_error' THEN error_signature_hash END AS signature_hash,
               tests_run, tests_passed, n_tool_calls,
               error_line, left(response, {MAX_TEXT_CHARS}) AS response
        FROM k
    """


def mine_failures(con: duckdb.DuckDBPyConnection, config: MiningConfig | None = None) -> FailureReport:
    """Pass rates, failure taxonomy and difficulty history from `task_logs` (see module doc)."""
    _ = config or MiningConfig()
    t0 = time.perf_counter()
    report = FailureReport()
    con.execute("SET TimeZone = 'UTC'")  # log days are UTC days, whatever the session had

    def run(step: str, sql: str) -> None:
        t, c = time.perf_counter(), time.process_time()
        con.execute(sql).fetchall()
        report.step_seconds[step] = round(time.perf_counter() - t, 4)
        report.step_cpu_seconds[step] = round(time.process_time() - c, 4)

    run("daily", daily_sql())
    con.execute("""CREATE OR REPLACE TEMP TABLE _mining_daily AS
                   SELECT * EXCLUDE (by_error, error) FROM _mining_groups WHERE by_error = 1""")
    run("task_stats", """
        CREATE OR REPLACE TABLE task_stats AS
        SELECT task_id, any_value(domain) AS domain, model, sum(attempts)::BIGINT AS attempts,
               sum(passes)::BIGINT AS passes, sum(passes) / nullif(sum(attempts), 0) AS pass_rate,
               min(first_seen) AS first_seen, max(last_seen) AS last_seen, arg_max(last_id, last_seen) AS last_id,
               sum(cost_usd) / nullif(sum(costed), 0) AS cost_usd, sum(tokens) / nullif(sum(tokened), 0) AS tokens,
               sum(cost_usd) AS _cost_total
        FROM _mining_daily GROUP BY task_id, model
    """)
    run("domain_stats", """
        CREATE OR REPLACE TABLE domain_stats AS
        SELECT domain, model, sum(attempts)::BIGINT AS attempts, sum(passes)::BIGINT AS passes,
               sum(passes) / nullif(sum(attempts), 0) AS pass_rate, count(*) AS tasks,
               avg(cost_usd) AS cost_usd_per_task, sum(_cost_total) AS cost_usd_total
        FROM task_stats GROUP BY domain, model ORDER BY domain, model
    """)
    con.execute("ALTER TABLE task_stats DROP COLUMN _cost_total")
    run("errors", errors_sql())
    con.execute("DROP TABLE IF EXISTS _mining_groups")
    # FSST compression analysis of 2.4M short texts costs ~15% of this step; dictionary/RLE still apply.
    # filter_pushdown off: see failure_cases_sql
    added = {"disabled_compression_methods": "fsst", "disabled_optimizers": "filter_pushdown"}
    values = {k: _sql_str(",".join(x for x in (old, extra) if x))
              for k, extra in added.items() if (old := _setting(con, k)) is not None}
    try:
        with session_settings(con, **values):
            run("failure_cases", failure_cases_sql())
    finally:
        con.execute("DROP TABLE IF EXISTS _mining_errors")
    run("failure_summary", """
        CREATE OR REPLACE TABLE failure_summary AS
        SELECT domain, model, failure_type, count(*) AS n, count(DISTINCT task_id) AS tasks
        FROM failure_cases GROUP BY ALL ORDER BY domain, model, failure_type
    """)
    run("failure_signatures", """
        CREATE OR REPLACE TABLE failure_signatures AS
        SELECT domain, model, exception_type, signature_hash, any_value(signature) AS signature, count(*) AS n,
               count(DISTINCT task_id) AS tasks, min(id) AS example_id
        FROM failure_cases WHERE signature IS NOT NULL GROUP BY ALL ORDER BY n DESC, signature_hash
    """)
    con.execute(DIFFICULTY_HISTORY_DDL)
    con.execute("BEGIN TRANSACTION")
    try:
        run("difficulty_history", """
            DELETE FROM difficulty_history h
            WHERE EXISTS (SELECT 1 FROM (SELECT DISTINCT model, log_date FROM _mining_daily) d
                          WHERE d.model = h.model AND d.log_date = h.log_date);
            INSERT INTO difficulty_history
            SELECT task_id, domain, model, log_date, attempts, passes, now()::TIMESTAMP
            FROM _mining_daily WHERE log_date IS NOT NULL AND task_id IS NOT NULL
        """)
        con.execute("COMMIT")
    except Exception:
        con.execute("ROLLBACK")
        raise
    report.records, report.judged, report.passes, report.tasks = (int(x or 0) for x in con.execute(
        "SELECT sum(records), sum(attempts), sum(passes), count(DISTINCT task_id) FROM _mining_daily").fetchall()[0])
    report.failures = report.judged - report.passes
    report.models = [r[0] for r in con.execute("SELECT DISTINCT model FROM task_stats ORDER BY 1").fetchall()]
    for d, t, n in con.execute("SELECT domain, failure_type, sum(n) FROM failure_summary GROUP BY ALL").fetchall():
        report.by_domain_type.setdefault(d, {})[t] = int(n)
    for d, a, p in con.execute("SELECT domain, sum(attempts), sum(passes) FROM domain_stats GROUP BY 1").fetchall():
        report.pass_rate_by_domain[d] = float(p) / float(a) if a else 0.0
    for d, c in con.execute("SELECT domain, avg(cost_usd) FROM task_stats WHERE cost_usd IS NOT NULL GROUP BY 1").fetchall():
        report.cost_usd_per_task_by_domain[d] = float(c)
    report.cost_usd_total = float(con.execute("SELECT coalesce(sum(cost_usd_total), 0) FROM domain_stats")
                                  .fetchall()[0][0])
    report.signatures = int(con.execute("SELECT count(*) FROM failure_signatures").fetchall()[0][0])
    report.history_rows = int(con.execute("SELECT count(*) FROM difficulty_history").fetchall()[0][0])
    con.execute("DROP TABLE IF EXISTS _mining_daily")
    report.seconds = time.perf_counter() - t0
    return report
