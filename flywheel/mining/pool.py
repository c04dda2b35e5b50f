"""The task pool: the learnable frontier of the current model, decontaminated and de-duplicated.

Candidates (from `task_stats` of the current model, which `mine_failures` writes; prompt and
reference come from the task's latest record):

- `frontier`: at least `min_attempts` judged attempts, some passed and some failed;
- `failure_with_reference`: any other task with a failed attempt whose logged reference makes a
  verifier possible (its environment's `reference_sql`: math `answer`; code `entry_point` + `test`;
  agent `tools` + `initial_state` + `goal`). Tasks always solved, and never-solved tasks without a reference, are left out.

Then every candidate whose prompt overlaps a held-out evaluation prompt is dropped
(`decontaminated_tasks`), and of each group of near-duplicate prompts only the task with the
most attempts stays (`near_duplicates`).

Difficulty is the posterior mean fail rate under a Beta prior:
`(fails + k * m) / (attempts + k)`, where `m` is the task's fail rate under earlier models
(from `difficulty_history`, Laplace-smoothed) or, for a task no other model has seen, the
domain's fail rate, and `k = prior_strength`. A new base model thus starts from what earlier
ones found hard. Rank: a task teaches most when its outcome is least certain, so tasks are
ordered by `difficulty * (1 - difficulty)` (then attempts, then task id) within each domain,
and domains are interleaved (rank 1..D are each domain's best), so the first N rows of the
pool are a balanced curriculum.

`MiningConfig.selection="uniform"` is the control that asks whether choosing failures matters: every
logged task with `min_attempts` attempts or a reference, solved ones included, ranked by a hash of
its id instead of its difficulty; decontamination and near-duplicates as above.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import duckdb

from flywheel.environments.registry import default_environments
from flywheel.environments.task import Task
from flywheel.mining.config import MiningConfig
from flywheel.mining.pool_runs import record_pool_run
from flywheel.mining.textsim import heldout_overlap, near_duplicate_pairs
from flywheel.tasks.suites import DOMAINS, heldout_suite
from flywheel.tasks.world_suites import production_suite, test_suite
from flywheel.warehouse.tables import DIFFICULTY_HISTORY_DDL
from flywheel.world.responder import text_from_messages

TASK_POOL_COLUMNS: tuple[tuple[str, str], ...] = (
    ("task_id", "VARCHAR"), ("domain", "VARCHAR"), ("prompt", "VARCHAR"), ("reference", "VARCHAR"),
    ("failed_response", "VARCHAR"), ("attempts", "BIGINT"), ("passes", "BIGINT"), ("pass_rate", "DOUBLE"),
    ("difficulty", "DOUBLE"), ("reason", "VARCHAR"), ("rank", "INTEGER"),
)
"""The `task_pool` table contract other stages read."""

def has_reference_sql(d: str, r: str) -> str:
    """DuckDB condition: domain column `d`'s environment can drive a verifier from the JSON reference column `r`
    (`Environment.reference_sql`); false for a domain no environment serves or one without the rule."""
    envs = default_environments()
    whens = []
    for domain in envs.domains():
        cond = envs.for_domain(domain).reference_sql(r)
        if cond:
            whens.append(f"    WHEN '{domain.replace(chr(39), chr(39) * 2)}' THEN {cond}\n")
    return f"CASE {d}\n{''.join(whens)}    ELSE false END"


@dataclass
class PoolReport:
    """What `build_task_pool` did."""

    model: str | None = None  # the model of the most recent record: the champion's own traffic in a turn
    models: list[str] = field(default_factory=list)  # every model whose failures were mined
    pool_by_model: dict[str, int] = field(default_factory=dict)  # pool tasks each model attempted
    candidates: int = 0
    decontaminated: int = 0
    near_duplicates: int = 0
    pool: int = 0
    pool_by_domain: dict[str, int] = field(default_factory=dict)
    reasons: dict[str, int] = field(default_factory=dict)
    heldout_prompts: int = 0
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def heldout_prompts(domains: tuple[str, ...] | None = None) -> list[tuple[str, str, str]]:
    """(domain, task_id, prompt) of every evaluation task (the decontamination reference): each domain's
    held-out, production and frozen test suites, at their default sizes (a smaller evaluation is a prefix)."""
    out: dict[str, tuple[str, str, str]] = {}
    for d in domains or DOMAINS:
        heldout = heldout_suite(d)
        for t in (*heldout, *production_suite(d, len(heldout)), *test_suite(d, len(heldout))):
            out.setdefault(t.task_id, (t.domain, t.task_id, t.prompt))
    return list(out.values())


def current_model(con: duckdb.DuckDBPyConnection, config: MiningConfig) -> str | None:
    """`config.model`, else the model that served the most recent log record."""
    if config.model:
        return config.model
    row = con.execute("SELECT model FROM task_logs ORDER BY timestamp DESC, id DESC LIMIT 1").fetchall()
    return row[0][0] if row else None


def mined_models(con: duckdb.DuckDBPyConnection, config: MiningConfig) -> list[str]:
    """The models whose failures the pool is built from: `config.model` when set (a restriction), else every
    model that served the most recent log day (a team's logs from several models are all mined)."""
    if config.model:
        return [config.model]
    return [r[0] for r in con.execute("""
        WITH d AS (SELECT coalesce(log_date, CAST(timestamp AS DATE)) AS day, model FROM task_logs)
        SELECT DISTINCT model FROM d WHERE day = (SELECT max(day) FROM d) ORDER BY 1""").fetchall()]


def _temp_table(con: duckdb.DuckDBPyConnection, name: str, columns: dict[str, list[str | None]]) -> None:
    """A temp table of VARCHAR columns from Python lists, as list parameters: registering an Arrow table
    instead makes DuckDB import pandas (~0.3 s, more than the rest of a small pool)."""
    cols = ", ".join(f"unnest(${k}::VARCHAR[]) AS {k}" for k in columns)
    con.execute(f"CREATE OR REPLACE TEMP TABLE {name} AS SELECT {cols}", columns).fetchall()


def _empty_pool(con: duckdb.DuckDBPyConnection) -> None:
    cols = ", ".join(f"{n} {t}" for n, t in TASK_POOL_COLUMNS)
    con.execute(f"CREATE OR REPLACE TABLE task_pool ({cols})")


def build_task_pool(con: duckdb.DuckDBPyConnection, config: MiningConfig | None = None,
                    heldout: list[tuple[str, str, str]] | None = None) -> PoolReport:
    """Write `task_pool`, `decontaminated_tasks`, `near_duplicates` (see module doc).

    Needs `task_stats` and `failure_cases` from `mine_failures`. `heldout` is (domain, task_id,
    prompt) of the evaluation sets; default: every domain's `heldout_suite`.
    """
    cfg = config or MiningConfig()
    t0 = time.perf_counter()
    model = current_model(con, cfg)
    report = PoolReport(model=model, models=mined_models(con, cfg))
    con.execute("CREATE OR REPLACE TEMP TABLE _pool_models AS SELECT unnest($m::VARCHAR[]) AS model",
                {"m": report.models})
    held = heldout if heldout is not None else heldout_prompts()
    report.heldout_prompts = len(held)
    if model is None:
        _empty_pool(con)
        con.execute("CREATE OR REPLACE TABLE decontaminated_tasks (task_id VARCHAR, domain VARCHAR, overlap DOUBLE, "
                    "heldout_task_id VARCHAR, heldout_prompt VARCHAR)")
        con.execute("CREATE OR REPLACE TABLE near_duplicates (task_id VARCHAR, duplicate_of VARCHAR, jaccard DOUBLE)")
        return report
    dom_filter = ""
    if cfg.domains:
        dom_filter = "AND domain IN (" + ", ".join("'" + d.replace("'", "''") + "'" for d in cfg.domains) + ")"
    # 1. candidates with the current model's counts, prompt and reference of their latest record
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE _pool_stats AS
        SELECT task_id, any_value(domain) AS domain, sum(attempts) AS attempts, sum(passes) AS passes,
               sum(attempts) - sum(passes) AS fails, arg_max(last_id, last_seen) AS last_id,
               max(last_seen) AS last_seen FROM task_stats
        WHERE model IN (SELECT model FROM _pool_models) AND attempts > 0 {dom_filter}
        GROUP BY task_id {"HAVING sum(passes) < sum(attempts)" if cfg.selection == "failures" else ""}
    """).fetchall()
    # the records the pool reads -- each candidate's latest record (prompt, reference) and its latest
    # failing one (the logged failing response) -- in ONE scan of task_logs: a lookup by id reads the
    # whole id column, so two lookups cost two scans
    con.execute("""
        CREATE OR REPLACE TEMP TABLE _pool_lastfail AS
        SELECT task_id, arg_max(id, (timestamp, id)) AS id, arg_max(timestamp, (timestamp, id)) AS ts FROM failure_cases
        WHERE model IN (SELECT model FROM _pool_models) AND task_id IN (SELECT task_id FROM _pool_stats)
        GROUP BY task_id
    """).fetchall()
    con.execute("""
        CREATE OR REPLACE TEMP TABLE _pool_ids AS
        SELECT last_id AS id FROM _pool_stats UNION SELECT id FROM _pool_lastfail
    """).fetchall()
    # those records are the latest of their tasks: a bound on their timestamps lets the scan skip the Parquet row
    # groups of older days (their min/max statistics), instead of reading every record's messages
    since, undated = con.execute("""
        SELECT min(ts), count(*) FILTER (WHERE ts IS NULL)
        FROM (SELECT last_seen AS ts FROM _pool_stats UNION ALL SELECT ts FROM _pool_lastfail)""").fetchall()[0]
    bound = "AND l.timestamp >= $since" if since is not None and not undated else ""
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE _pool_records AS
        SELECT l.id, l.task_id, l.messages, l.reference FROM task_logs l SEMI JOIN _pool_ids i ON l.id = i.id
        WHERE true {bound}
    """, {"since": since} if bound else None).fetchall()
    con.execute("""
        CREATE OR REPLACE TEMP TABLE _pool_text AS
        WITH latest AS (
            SELECT task_id, messages, reference FROM _pool_records WHERE id IN (SELECT last_id FROM _pool_stats)
        ), u AS (
            SELECT task_id, reference,
                   list_filter(from_json(messages, '[{"role":"VARCHAR","content":"VARCHAR"}]'),
                               lambda x: x.role = 'user') AS um
            FROM latest
        )
        SELECT task_id, any_value(um[-1].content) AS prompt, any_value(reference) AS reference FROM u GROUP BY task_id
    """).fetchall()
    has_ref = f'coalesce({has_reference_sql("s.domain", "t.reference")}, false)'
    reason = (f"CASE WHEN s.passes > 0 AND s.attempts >= {cfg.min_attempts} THEN 'frontier' "
              f"WHEN {has_ref} THEN 'failure_with_reference' END" if cfg.selection == "failures" else
              f"CASE WHEN s.attempts >= {cfg.min_attempts} OR {has_ref} THEN 'uniform' END")
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE _pool_cand AS
        SELECT s.* EXCLUDE (last_id, last_seen), t.prompt, t.reference, {reason} AS reason
        FROM _pool_stats s JOIN _pool_text t USING (task_id) WHERE t.prompt IS NOT NULL
    """)
    con.execute("DELETE FROM _pool_cand WHERE reason IS NULL").fetchall()
    report.candidates = int(con.execute("SELECT count(*) FROM _pool_cand").fetchall()[0][0])
    # 2. decontamination against the held-out sets
    _temp_table(con, "_pool_heldout", {"domain": [h[0] for h in held], "task_id": [h[1] for h in held],
                                       "prompt": [h[2] for h in held]})
    heldout_overlap(con, "_pool_cand", "_pool_heldout", "_pool_overlap", cfg.decontam_ngram)
    con.execute(f"""
        CREATE OR REPLACE TABLE decontaminated_tasks AS
        SELECT c.task_id, c.domain, o.overlap, o.heldout_task_id, h.prompt AS heldout_prompt
        FROM _pool_overlap o JOIN _pool_cand c USING (task_id) JOIN _pool_heldout h ON h.task_id = o.heldout_task_id
        WHERE o.overlap >= {cfg.decontam_threshold} ORDER BY c.domain, c.task_id
    """)
    con.execute("DELETE FROM _pool_cand WHERE task_id IN (SELECT task_id FROM decontaminated_tasks)").fetchall()
    report.decontaminated = int(con.execute("SELECT count(*) FROM decontaminated_tasks").fetchall()[0][0])
    # 3. near-duplicates: keep the task with the most attempts (then the smaller id) of each similar pair
    near_duplicate_pairs(con, "_pool_cand", "_pool_pairs", cfg.near_dup_ngram, cfg.near_dup_threshold,
                         cfg.minhash_perms, cfg.lsh_bands)
    con.execute("""
        CREATE OR REPLACE TABLE near_duplicates AS
        WITH p AS (
            SELECT p.*, ca.attempts AS na, cb.attempts AS nb
            FROM _pool_pairs p JOIN _pool_cand ca ON ca.task_id = p.a JOIN _pool_cand cb ON cb.task_id = p.b
        ), d AS (
            SELECT CASE WHEN na >= nb THEN b ELSE a END AS task_id, CASE WHEN na >= nb THEN a ELSE b END AS keep,
                   greatest(na, nb) AS keep_attempts, jaccard FROM p
        )
        SELECT task_id, arg_max(keep, (keep_attempts, jaccard, keep)) AS duplicate_of, max(jaccard) AS jaccard
        FROM d GROUP BY task_id ORDER BY task_id
    """)
    con.execute("DELETE FROM _pool_cand WHERE task_id IN (SELECT task_id FROM near_duplicates)").fetchall()
    report.near_duplicates = int(con.execute("SELECT count(*) FROM near_duplicates").fetchall()[0][0])
    # 4. difficulty (Beta posterior with a history prior) and rank
    con.execute(DIFFICULTY_HISTORY_DDL)
    order = UNCERTAIN_FIRST if cfg.selection == "failures" else ID_HASH_ORDER
    con.execute(DIFFICULTY_PRIOR_SQL.format(k=float(cfg.prior_strength), limit=int(cfg.max_pool_per_domain),
                                            order=order))
    _fill_failed_responses(con)
    for d, n in con.execute("SELECT domain, count(*) FROM task_pool GROUP BY 1 ORDER BY 1").fetchall():
        report.pool_by_domain[d] = int(n)
    for r, n in con.execute("SELECT reason, count(*) FROM task_pool GROUP BY 1 ORDER BY 1").fetchall():
        report.reasons[r] = int(n)
    for m, n in con.execute("""SELECT s.model, count(*) FROM task_stats s SEMI JOIN task_pool p USING (task_id)
                               WHERE s.model IN (SELECT model FROM _pool_models) GROUP BY 1 ORDER BY 1""").fetchall():
        report.pool_by_model[m] = int(n)
    report.pool = sum(report.pool_by_domain.values())
    record_pool_run(con, report.model, cfg.to_dict(), report.to_dict())
    for t in ("_pool_models", "_pool_stats", "_pool_lastfail", "_pool_ids", "_pool_records", "_pool_text", "_pool_cand", "_pool_heldout",
              "_pool_overlap", "_pool_pairs"):
        con.execute(f"DROP TABLE IF EXISTS {t}")
    report.seconds = time.perf_counter() - t0
    return report


UNCERTAIN_FIRST = "difficulty * (1 - difficulty) DESC, attempts DESC, task_id"
"""The flywheel's rank within a domain: the task whose outcome is least certain teaches most."""
ID_HASH_ORDER = "md5(task_id), task_id"
"""The uniform control's rank: an order no outcome informs, the same on every run (a hash of the id)."""

DIFFICULTY_PRIOR_SQL = """
CREATE OR REPLACE TABLE task_pool AS
WITH dom AS (
    SELECT domain, (sum(attempts) - sum(passes) + 1.0) / (sum(attempts) + 2.0) AS m
    FROM task_stats WHERE model IN (SELECT model FROM _pool_models) GROUP BY domain
), hist AS (
    SELECT task_id, sum(attempts) AS a, sum(passes) AS p FROM difficulty_history
    WHERE model NOT IN (SELECT model FROM _pool_models) AND task_id IN (SELECT task_id FROM _pool_cand)
    GROUP BY task_id
), scored AS (
    SELECT c.*, c.passes / c.attempts AS pass_rate,
           (c.fails + {k} * coalesce((h.a - h.p + 1.0) / (h.a + 2.0), dom.m))
               / (c.attempts + {k}) AS difficulty
    FROM _pool_cand c JOIN dom USING (domain) LEFT JOIN hist h USING (task_id)
), ranked AS (
    SELECT *, row_number() OVER (PARTITION BY domain
                                 ORDER BY {order}) AS domain_rank
    FROM scored
)
SELECT task_id, domain, prompt, reference, CAST(NULL AS VARCHAR) AS failed_response, attempts::BIGINT AS attempts,
       passes::BIGINT AS passes, pass_rate::DOUBLE AS pass_rate, difficulty::DOUBLE AS difficulty, reason,
       CAST(row_number() OVER (ORDER BY domain_rank, domain) AS INTEGER) AS rank
FROM ranked WHERE domain_rank <= {limit}
ORDER BY rank
"""



def contaminated_pool_tasks(con: duckdb.DuckDBPyConnection, config: MiningConfig | None = None,
                            heldout: list[tuple[str, str, str]] | None = None) -> tuple[list[str], int]:
    """Re-check the finished pool: (pool task ids overlapping a held-out prompt, tasks mining dropped)."""
    cfg = config or MiningConfig()
    held = heldout if heldout is not None else heldout_prompts()
    _temp_table(con, "_chk_heldout", {"task_id": [h[1] for h in held], "prompt": [h[2] for h in held]})
    heldout_overlap(con, "task_pool", "_chk_heldout", "_chk_overlap", cfg.decontam_ngram)
    bad = [r[0] for r in con.execute(
        f"SELECT task_id FROM _chk_overlap WHERE overlap >= {cfg.decontam_threshold} ORDER BY 1").fetchall()]
    dropped = int(con.execute("SELECT count(*) FROM decontaminated_tasks").fetchall()[0][0])
    con.execute("DROP TABLE IF EXISTS _chk_overlap; DROP TABLE IF EXISTS _chk_heldout")
    return bad, dropped


def _fill_failed_responses(con: duckdb.DuckDBPyConnection) -> None:
    """`failed_response`: the latest logged failing response of each pool task (`_pool_lastfail`, read
    into `_pool_records`), in the training text format."""
    rows = con.execute("""
        SELECT f.task_id, r.messages FROM _pool_lastfail f JOIN _pool_records r ON r.id = f.id
        WHERE f.task_id IN (SELECT task_id FROM task_pool)
    """).fetchall()
    ids, texts = [], []
    for task_id, messages in rows:
        try:
            msgs = json.loads(messages)
            text = text_from_messages(msgs) if isinstance(msgs, list) else None
        except (json.JSONDecodeError, TypeError, AttributeError):
            text = None
        ids.append(task_id)
        texts.append(text)
    _temp_table(con, "_pool_fr", {"task_id": ids, "text": texts})
    con.execute("UPDATE task_pool SET failed_response = f.text FROM _pool_fr f WHERE task_pool.task_id = f.task_id").fetchall()
    con.execute("DROP TABLE _pool_fr")


def _solution(domain: str, prompt: str, ref: dict[str, Any]) -> str:
    """The reference solution in the training text format, or "" when the reference has none
    (`Environment.logged_solution`)."""
    envs = default_environments()
    try:
        return envs.for_domain(domain).logged_solution(prompt, ref) if envs.has_domain(domain) else ""
    except Exception:  # a malformed logged reference: no gold text, the task is still usable
        return ""


def load_task_pool(con: duckdb.DuckDBPyConnection, domains: list[str] | tuple[str, ...] | None = None,
                   limit: int | None = None, require_reference: bool = True,
                   per_domain: Mapping[str, int] | None = None) -> list[Task]:
    """The pool as `Task`s in rank order (the curriculum verifiers and the trainer consume).

    `solution` is the reference solution as text where the reference has one (math
    `Answer: N`, code the canonical body, agent the replayed gold calls). `meta` carries
    `pass_rate`, `difficulty`, `attempts`, `passes`, `reason`, `rank`, `failed_response`.
    With `require_reference`, tasks whose reference cannot drive a verifier are skipped.
    `per_domain` keeps each domain's first N by rank (a domain it does not name: none);
    `limit` then caps the whole list.
    """
    where, params = ["1=1"], {}
    if domains is not None:
        where.append("list_contains($domains, domain)")
        params["domains"] = list(domains)
    if require_reference:
        where.append(has_reference_sql("domain", "reference"))
    sql = f"SELECT * FROM task_pool WHERE {' AND '.join(where)} ORDER BY rank"
    if limit is not None and per_domain is None:
        sql += f" LIMIT {int(limit)}"
    cur = con.execute(sql, params)
    names = [d[0] for d in cur.description]
    out: list[Task] = []
    taken: dict[str, int] = {}
    for row in cur.fetchall():
        r = dict(zip(names, row, strict=True))
        if per_domain is not None:
            if taken.get(r["domain"], 0) >= int(per_domain.get(r["domain"], 0)):
                continue
            taken[r["domain"]] = taken.get(r["domain"], 0) + 1
        try:
            ref = json.loads(r["reference"]) if r["reference"] else {}
        except json.JSONDecodeError:
            ref = {}
        ref = ref if isinstance(ref, dict) else {}
        meta = {k: r[k] for k in ("pass_rate", "difficulty", "attempts", "passes", "reason", "rank", "failed_response")}
        out.append(Task(r["task_id"], r["domain"], r["prompt"], ref, _solution(r["domain"], r["prompt"], ref), meta))
    return out if limit is None else out[: int(limit)]
