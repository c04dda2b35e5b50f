"""Prompt similarity in DuckDB: word n-grams, MinHash-LSH near-duplicates, held-out overlap.

Prompts are lower-cased and split on anything that is not `[a-z0-9_]`, so case, whitespace
and punctuation never make two prompts differ. A prompt shorter than `n` words is one n-gram
(all its words). Near-duplicates: MinHash signatures banded for LSH propose candidate pairs,
whose exact shingle Jaccard then decides. Decontamination: the share of a prompt's n-grams
found in one held-out prompt (containment), maximised over held-out prompts.
"""

from __future__ import annotations

import re

import duckdb

TOKEN_SPLIT_RE = r"[^a-z0-9_]+"


def tokens(text: str) -> list[str]:
    """Python mirror of the SQL tokenizer."""
    return [t for t in re.split(TOKEN_SPLIT_RE, text.lower()) if t]


def ngrams(text: str, n: int) -> set[str]:
    """Distinct word n-grams of `text` (the whole text as one gram when shorter than `n`)."""
    t = tokens(text)
    if not t:
        return set()
    return {" ".join(t[i:i + n]) for i in range(max(len(t) - n + 1, 1))}


def create_ngrams(con: duckdb.DuckDBPyConnection, src: str, dst: str, key: str, n: int) -> None:
    """TEMP table `dst(key, g)` of distinct word n-grams of `src(key, prompt)`."""
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE {dst} AS
        WITH t AS (
            SELECT {key} AS k, list_filter(regexp_split_to_array(lower(prompt), '{TOKEN_SPLIT_RE}'), lambda x: x <> '') AS w
            FROM {src}
        ), s AS (
            SELECT k, w, unnest(generate_series(1, greatest(len(w) - {n} + 1, 1))) AS i FROM t WHERE len(w) > 0
        )
        SELECT DISTINCT k AS {key}, array_to_string(w[i : i + {n} - 1], ' ') AS g FROM s
    """)


def near_duplicate_pairs(con: duckdb.DuckDBPyConnection, src: str, dst: str, n: int, threshold: float,
                         perms: int, bands: int) -> None:
    """TEMP table `dst(a, b, jaccard)` of task pairs (a < b) whose shingle Jaccard >= threshold.

    `src(task_id, prompt)`. Candidates come from MinHash-LSH (`perms` hashes in `bands` bands),
    so a pair at the threshold is found with high probability (0.8 Jaccard, 32 perms, 8 bands:
    98.5%); every reported pair's Jaccard is exact.
    """
    rows = perms // bands
    create_ngrams(con, src, "_sim_sh", "task_id", n)
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE _sim_band AS
        WITH mh AS (
            SELECT task_id, r.k, min(hash(g, r.k)) AS h FROM _sim_sh, range({perms}) r(k) GROUP BY ALL
        )
        SELECT task_id, k // {rows} AS band, hash(list(h ORDER BY k)) AS key FROM mh GROUP BY ALL
    """)
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE {dst} AS
        WITH cand AS (
            SELECT DISTINCT x.task_id AS a, y.task_id AS b
            FROM _sim_band x JOIN _sim_band y ON x.band = y.band AND x.key = y.key AND x.task_id < y.task_id
        ), sizes AS (SELECT task_id, count(*) AS n FROM _sim_sh GROUP BY task_id),
        inter AS (
            SELECT c.a, c.b, count(*) AS i
            FROM cand c JOIN _sim_sh s1 ON s1.task_id = c.a JOIN _sim_sh s2 ON s2.task_id = c.b AND s2.g = s1.g
            GROUP BY ALL
        )
        SELECT inter.a, inter.b, inter.i / (sa.n + sb.n - inter.i) AS jaccard
        FROM inter JOIN sizes sa ON sa.task_id = inter.a JOIN sizes sb ON sb.task_id = inter.b
        WHERE inter.i / (sa.n + sb.n - inter.i) >= {threshold}
    """)
    con.execute("DROP TABLE IF EXISTS _sim_sh; DROP TABLE IF EXISTS _sim_band")


def heldout_overlap(con: duckdb.DuckDBPyConnection, src: str, heldout: str, dst: str, n: int) -> None:
    """TEMP table `dst(task_id, overlap, heldout_task_id)`: each task's highest containment in one
    held-out prompt. `src(task_id, prompt)`, `heldout(task_id, prompt)`; tasks sharing no n-gram
    with any held-out prompt are absent."""
    create_ngrams(con, src, "_sim_cg", "task_id", n)
    create_ngrams(con, heldout, "_sim_hg", "task_id", n)
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE {dst} AS
        WITH sizes AS (SELECT task_id, count(*) AS n FROM _sim_cg GROUP BY task_id),
        shared AS (
            SELECT c.task_id, h.task_id AS heldout_task_id, count(*) AS k
            FROM _sim_cg c JOIN _sim_hg h ON c.g = h.g GROUP BY ALL
        )
        SELECT s.task_id, max(s.k / z.n) AS overlap, arg_max(s.heldout_task_id, s.k / z.n) AS heldout_task_id
        FROM shared s JOIN sizes z USING (task_id) GROUP BY s.task_id
    """)
    con.execute("DROP TABLE IF EXISTS _sim_cg; DROP TABLE IF EXISTS _sim_hg")
