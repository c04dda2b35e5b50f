"""Failure mining on a small hand-checked warehouse: exact pass rates, taxonomy, signatures, pool."""

from __future__ import annotations

import hashlib
import json
from datetime import date, datetime, timedelta, timezone

import duckdb
import pyarrow as pa
import pytest

from flywheel.mining import (
    FAILURE_TYPES,
    MiningConfig,
    build_task_pool,
    classify,
    load_task_pool,
    mine_failures,
)
from flywheel.mining.pool import contaminated_pool_tasks
from flywheel.mining.pool_runs import pool_coverage
from flywheel.mining.taxonomy import normalize_traceback

TASK_LOGS_DDL = """
CREATE TABLE task_logs (
    id VARCHAR NOT NULL, timestamp TIMESTAMPTZ NOT NULL, task_id VARCHAR NOT NULL, domain VARCHAR NOT NULL,
    model VARCHAR NOT NULL, messages VARCHAR NOT NULL, outcome VARCHAR NOT NULL, reference VARCHAR, extra VARCHAR,
    log_date DATE, source_file VARCHAR, source_line BIGINT, ingested_at TIMESTAMP, redactions INTEGER
)"""
"""I1's `task_logs` contract, created here so these tests need nothing but DuckDB."""

V1, V2 = "prod:v1", "prod:v2"
T0 = datetime(2026, 12, 1, 8, 0, tzinfo=timezone.utc)

PROMPT_A = "Ana has 3 apples. Ana gets 2 more. How many apples does Ana have now?"
PROMPT_D = "Question: " + PROMPT_A  # near-duplicate of A (Jaccard 13/14 on word 3-grams)
PROMPT_E = "Ben has 7 pens. Ben gives away 2. How many pens does Ben have left?"  # stands in for a held-out prompt
HELDOUT = [("math", "math-heldout-1", PROMPT_E)]
CODE_F = 'def add_2(x):\n    """Return x plus 2."""\n'
CODE_G = 'def half(x):\n    """Return x divided by 2."""\n'
AGENT_H = "Inventory: apple=1. Goal: apple=3. Use the tools, then call finish."
AGENT_I = "Inventory: pear=4. Goal: pear=1. Use the tools, then call finish."
TOOLS = [{"name": "add"}, {"name": "remove"}, {"name": "check"}, {"name": "finish"}]


def _tb(run: str, line: int, func: str, body: str, last: str) -> str:
    return (f'Traceback (most recent call last):\n  File "/sandbox/{run}/harness.py", line 27, in <module>\n'
            f'    check(candidate)\n  File "/sandbox/{run}/solution.py", line {line}, in {func}\n    {body}\n{last}\n')


TB_F1 = _tb("run_aaaa1111", 3, "add_2", "return x + None", "TypeError: bad operand <object at 0x7f00deadbeef>")
TB_F2 = _tb("run_bbbb2222", 4, "add_2", "return x + None", "TypeError: bad operand <object at 0x7f11cafef00d>")
TB_G = _tb("run_cccc3333", 3, "half", "return x // 0", "ZeroDivisionError: integer division by zero")
TB_ASSERT = _tb("run_dddd4444", 3, "check", "assert candidate(4) == 2", "AssertionError")


def _msgs(prompt: str, reply: str | None = None, calls: list[tuple[str, dict, str]] = (), system: bool = False):
    m = [{"role": "system", "content": "be helpful"}] if system else []
    m.append({"role": "user", "content": prompt})
    for i, (name, args, result) in enumerate(calls):
        m.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]})
        m.append({"role": "tool", "tool_call_id": f"c{i}", "content": result})
    if reply is not None:
        m.append({"role": "assistant", "content": reply})
    return m


MATH_REF = {"answer": "5"}
CODE_F_REF = {"entry_point": "add_2", "test": "def check(candidate):\n    assert candidate(1) == 3\n",
              "canonical_solution": "    return x + 2\n"}
CODE_G_REF = {"entry_point": "half", "test": "def check(candidate):\n    assert candidate(4) == 2\n"}
AGENT_H_REF = {"tools": TOOLS, "initial_state": {"apple": 1}, "goal": {"apple": 3},
               "solution_calls": [["add", {"item": "apple", "qty": 2}], ["finish", {}]]}
AGENT_I_REF = {"tools": TOOLS, "initial_state": {"pear": 4}, "goal": {"pear": 1}}

# (task_id, domain, model, minutes after T0, messages, outcome, reference)
ROWS = [
    # math-A: v1 failed twice (wrong answers), v2 passes 2 of 4 -> frontier, history prior from v1
    ("math-A", "math", V1, -2000, _msgs(PROMPT_A, "Answer: 6"), {"status": "failure", "passed": False}, MATH_REF),
    ("math-A", "math", V1, -1990, _msgs(PROMPT_A, "Answer: 4"), {"status": "failure", "passed": False}, MATH_REF),
    ("math-A", "math", V2, 1, _msgs(PROMPT_A, "3 + 2 = 5. Answer: 5", system=True), {"status": "success", "passed": True},
     MATH_REF),
    ("math-A", "math", V2, 2, _msgs(PROMPT_A, "Answer: 5"), {"status": "success", "passed": True}, MATH_REF),
    ("math-A", "math", V2, 3, _msgs(PROMPT_A, "The answer is 6."), {"status": "failure", "passed": False}, MATH_REF),
    ("math-A", "math", V2, 4, _msgs(PROMPT_A, "Let me think about the apples"), {"status": "failure", "passed": False},
     MATH_REF),
    # math-B: always solved -> not in the pool
    *[("math-B", "math", V2, 10 + i, _msgs("What is 2 plus 2?", "Answer: 4"), {"passed": True}, {"answer": "4"})
      for i in range(3)],
    # math-C: never solved, has a reference -> failure_with_reference
    ("math-C", "math", V2, 20, _msgs("Cleo has 9 cards. Cleo gives away 9. How many cards are left?",
                                    "I'm sorry, but I can't help with that."), {"status": "refused", "passed": False},
     {"answer": "0"}),
    ("math-C", "math", V2, 21, _msgs("Cleo has 9 cards. Cleo gives away 9. How many cards are left?", ""),
     {"status": "timeout", "passed": False, "error": "TimeoutError: generation exceeded the 30 s deadline"},
     {"answer": "0"}),
    # math-D: near-duplicate of A with fewer attempts -> removed
    ("math-D", "math", V2, 30, _msgs(PROMPT_D, "Answer: 7"), {"status": "failure", "passed": False}, MATH_REF),
    # math-E: a held-out prompt -> decontaminated
    ("math-E", "math", V2, 40, _msgs(PROMPT_E, "Answer: 5"), {"status": "success", "passed": True}, {"answer": "5"}),
    ("math-E", "math", V2, 41, _msgs(PROMPT_E, "Answer: 9"), {"status": "failure", "passed": False}, {"answer": "5"}),
    # code-F: 1 pass, 2 runtime errors with the same bug (different run dir, line, address) -> one signature
    ("code-F", "code", V2, 50, _msgs(CODE_F, f"```python\n{CODE_F}    return x + 2\n```"),
     {"status": "success", "passed": True, "tests": {"run": 1, "passed": 1}}, CODE_F_REF),
    ("code-F", "code", V2, 51, _msgs(CODE_F, f"```python\n{CODE_F}    return x + None\n```"),
     {"status": "error", "passed": False, "tests": {"run": 1, "passed": 0}, "error": TB_F1}, CODE_F_REF),
    ("code-F", "code", V2, 52, _msgs(CODE_F, f"```python\n{CODE_F}    return x + None\n```"),
     {"status": "error", "passed": False, "tests": {"run": 1, "passed": 0}, "error": TB_F2}, CODE_F_REF),
    # code-G: a ZeroDivisionError, and a failed assert (a wrong answer, not a runtime error)
    ("code-G", "code", V2, 60, _msgs(CODE_G, f"```python\n{CODE_G}    return x // 0\n```"),
     {"status": "error", "passed": False, "error": TB_G}, CODE_G_REF),
    ("code-G", "code", V2, 61, _msgs(CODE_G, f"```python\n{CODE_G}    return x\n```"),
     {"status": "failure", "passed": False, "tests": {"run": 1, "passed": 0}, "error": TB_ASSERT}, CODE_G_REF),
    # agent-H: pass, invalid tool call, then prose without tool calls (format error)
    ("agent-H", "agent", V2, 70, _msgs(AGENT_H, "Done.", [("add", {"item": "apple", "qty": 2}, "apple=3"),
                                                         ("finish", {}, "done")]),
     {"status": "success", "passed": True}, AGENT_H_REF),
    ("agent-H", "agent", V2, 71, _msgs(AGENT_H, None, [("set", {"item": "apple", "qty": 3}, "Error: unknown tool")]),
     {"status": "failure", "passed": False, "error": "IllegalCall: unknown tool 'set'"}, AGENT_H_REF),
    ("agent-H", "agent", V2, 72, _msgs(AGENT_H, "You should add two apples."), {"status": "failure", "passed": False},
     AGENT_H_REF),
    # agent-I: one timeout -> failure_with_reference
    ("agent-I", "agent", V2, 80, _msgs(AGENT_I, None, [("check", {"item": "pear"}, "pear=4")] * 3),
     {"status": "timeout", "passed": False, "error": "TimeoutError: episode exceeded the 60 s limit"}, AGENT_I_REF),
    # chat-J: unknown domain, no reference: failures counted, never pooled; plus one unjudged record
    ("chat-J", "chat", V2, 90, _msgs("Tell me a joke", "No."), {"passed": False}, None),
    ("chat-J", "chat", V2, 91, _msgs("Tell me a joke", "Why?"), {"passed": False}, None),
    ("chat-J", "chat", V2, 92, _msgs("Tell me a joke", "Hm."), {"latency_ms": 5}, None),
]


def make_warehouse(path) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(str(path))
    con.execute("SET TimeZone = 'UTC'")
    con.execute(TASK_LOGS_DDL)
    rows = []
    for i, (task_id, domain, model, minutes, msgs, outcome, ref) in enumerate(ROWS):
        ts = T0 + timedelta(minutes=minutes)
        rows.append((f"r{i:03d}", ts, task_id, domain, model, json.dumps(msgs), json.dumps(outcome),
                     None if ref is None else json.dumps(ref), None, ts.date(), "fixture.jsonl", i + 1, None, 0))
    _insert(con, rows)
    return con


def _insert(con: duckdb.DuckDBPyConnection, rows: list[tuple]) -> None:
    """Bulk insert through Arrow (DuckDB's executemany is row-at-a-time)."""
    names = ["id", "timestamp", "task_id", "domain", "model", "messages", "outcome", "reference", "extra",
             "log_date", "source_file", "source_line", "ingested_at", "redactions"]
    cols = {n: [r[i] for r in rows] for i, n in enumerate(names)}
    cols["timestamp"] = pa.array(cols["timestamp"], pa.timestamp("us", tz="UTC"))
    con.register("_rows_arrow", pa.table({n: cols[n] for n in names}))
    con.execute("INSERT INTO task_logs SELECT * FROM _rows_arrow")
    con.unregister("_rows_arrow")


@pytest.fixture
def con(tmp_path):
    c = make_warehouse(tmp_path / "wh.duckdb")
    yield c
    c.close()


def _rows(con, sql):
    return con.execute(sql).fetchall()


def test_pass_rates_per_task_domain_and_model(con):
    r = mine_failures(con)
    stats = {(t, m): (a, p) for t, m, a, p in _rows(con, "SELECT task_id, model, attempts, passes FROM task_stats")}
    assert stats == {
        ("math-A", V1): (2, 0), ("math-A", V2): (4, 2), ("math-B", V2): (3, 3), ("math-C", V2): (2, 0),
        ("math-D", V2): (1, 0), ("math-E", V2): (2, 1), ("code-F", V2): (3, 1), ("code-G", V2): (2, 0),
        ("agent-H", V2): (3, 1), ("agent-I", V2): (1, 0), ("chat-J", V2): (2, 0),  # the unjudged row counts nowhere
    }
    dom = {(d, m): (a, p) for d, m, a, p in _rows(con, "SELECT domain, model, attempts, passes FROM domain_stats")}
    assert dom == {("math", V1): (2, 0), ("math", V2): (12, 6), ("code", V2): (5, 1), ("agent", V2): (4, 1),
                   ("chat", V2): (2, 0)}
    assert (r.records, r.judged, r.passes, r.failures) == (len(ROWS), len(ROWS) - 1, 8, len(ROWS) - 9)
    assert r.pass_rate_by_domain["math"] == pytest.approx(6 / 14)


def test_failure_taxonomy_counts(con):
    r = mine_failures(con)
    kinds = dict(_rows(con, "SELECT id, failure_type FROM failure_cases"))
    by_task = {}
    for (task_id, ftype) in _rows(con, "SELECT task_id, failure_type FROM failure_cases ORDER BY id"):
        by_task.setdefault(task_id, []).append(ftype)
    assert by_task == {
        "math-A": ["wrong_answer", "wrong_answer", "wrong_answer", "format_error"],  # "The answer is 6." has an answer
        "math-C": ["refused", "timeout"], "math-D": ["wrong_answer"], "math-E": ["wrong_answer"],
        "code-F": ["runtime_error", "runtime_error"], "code-G": ["runtime_error", "wrong_answer"],  # assert = wrong
        "agent-H": ["invalid_tool_call", "format_error"], "agent-I": ["timeout"], "chat-J": ["wrong_answer"] * 2,
    }
    assert len(kinds) == r.failures == 17
    totals = {t: sum(c.get(t, 0) for c in r.by_domain_type.values()) for t in FAILURE_TYPES}
    assert totals == {"wrong_answer": 8, "format_error": 2, "runtime_error": 3, "timeout": 2,
                      "invalid_tool_call": 1, "refused": 1}
    md = r.markdown()
    assert "| code | 0.200 | 1 | 0 | 3 | 0 | 0 | 0 | 4 |" in md and "**all**" in md


def test_traceback_signatures_group_the_same_bug(con):
    mine_failures(con)
    sigs = _rows(con, "SELECT exception_type, n, tasks, signature FROM failure_signatures ORDER BY n DESC")
    assert [(e, n, t) for e, n, t, _ in sigs] == [("TypeError", 2, 1), ("ZeroDivisionError", 1, 1)]
    sig = sigs[0][3]
    assert "run_" not in sig and "0x7f" not in sig and "line N" in sig and "add_N" in sig
    assert sig == normalize_traceback(TB_F1) == normalize_traceback(TB_F2)
    exc = _rows(con, "SELECT exception_type FROM failure_cases WHERE task_id = 'code-G' ORDER BY id")
    assert exc == [("ZeroDivisionError",), ("AssertionError",)]


def test_sql_taxonomy_matches_python_spec(con):
    mine_failures(con)
    sql = {i: (k, e, s) for i, k, e, s in _rows(
        con, "SELECT id, failure_type, exception_type, signature FROM failure_cases")}
    for i, (_, domain, _, _, msgs, outcome, _) in enumerate(ROWS):
        if f"r{i:03d}" in sql:
            assert sql[f"r{i:03d}"] == classify(domain, outcome, msgs), ROWS[i]


def test_task_pool_frontier_decontamination_near_duplicates(con):
    mine_failures(con)
    cfg = MiningConfig()
    rep = build_task_pool(con, cfg, heldout=HELDOUT)
    assert rep.model == V2  # the model of the latest record
    assert rep.candidates == 8  # A C D E F G H I (B always passes; J has no reference)
    assert rep.decontaminated == 1 and _rows(con, "SELECT task_id, heldout_task_id FROM decontaminated_tasks") == [
        ("math-E", "math-heldout-1")]
    assert rep.near_duplicates == 1
    assert _rows(con, "SELECT task_id, duplicate_of FROM near_duplicates") == [("math-D", "math-A")]
    pool = {r[0]: r[1:] for r in _rows(con, "SELECT task_id, reason, attempts, passes, difficulty, rank FROM task_pool")}
    assert set(pool) == {"math-A", "math-C", "code-F", "code-G", "agent-H", "agent-I"}
    assert {t: v[0] for t, v in pool.items()} == {
        "math-A": "frontier", "code-F": "frontier", "agent-H": "frontier",
        "math-C": "failure_with_reference", "code-G": "failure_with_reference", "agent-I": "failure_with_reference"}
    # Beta posterior: math-A's prior is v1's fail rate (2 of 2 -> (2+1)/(2+2)); code-F's is code's under v2 (5/7)
    assert pool["math-A"][3] == pytest.approx((2 + 4 * 0.75) / (4 + 4))
    assert pool["code-F"][3] == pytest.approx((2 + 4 * 5 / 7) / (3 + 4))
    assert pool["math-C"][3] == pytest.approx((2 + 4 * 7 / 14) / (2 + 4))  # math under v2: 6 of 12 fail
    # ranks interleave domains: the first three are each domain's most uncertain task
    ranks = sorted((v[4], t) for t, v in pool.items())
    assert [t for _, t in ranks[:3]] == ["agent-H", "code-F", "math-A"]
    assert rep.pool_by_domain == {"agent": 2, "code": 2, "math": 2}
    assert contaminated_pool_tasks(con, cfg, heldout=HELDOUT) == ([], 1)
    assert pool_coverage(con) == {"math": (4, 2), "code": (2, 2), "agent": (2, 2)}


def test_load_task_pool_returns_tasks_with_gold_and_logged_failure(con):
    mine_failures(con)
    build_task_pool(con, heldout=HELDOUT)
    tasks = load_task_pool(con)
    assert [t.task_id for t in tasks][:3] == ["agent-H", "code-F", "math-A"]
    by = {t.task_id: t for t in tasks}
    assert by["math-A"].prompt == PROMPT_A and by["math-A"].solution == "Answer: 5"
    assert by["math-A"].meta["failed_response"] == "Let me think about the apples"  # the latest failure
    assert by["code-F"].solution == f"```python\n{CODE_F}    return x + 2\n```"
    assert by["code-F"].verifier_task()["entry_point"] == "add_2"
    h = by["agent-H"]
    assert h.solution.startswith('<tool_call>{"name":"add","arguments":{"item":"apple","qty":2}}</tool_call>')
    assert h.meta["failed_response"] == "You should add two apples."
    assert by["agent-I"].solution == ""  # no solution_calls logged: still a verifiable task
    assert [t.task_id for t in load_task_pool(con, domains=["code"], limit=1)] == ["code-F"]


def test_difficulty_history_upserts_and_survives_pruned_logs(con):
    mine_failures(con)
    before = _rows(con, "SELECT task_id, model, log_date, attempts, passes FROM difficulty_history ORDER BY ALL")
    mine_failures(con)  # re-run: nothing duplicated
    assert _rows(con, "SELECT task_id, model, log_date, attempts, passes FROM difficulty_history ORDER BY ALL") == before
    v1_day = (T0 + timedelta(minutes=-2000)).date()
    assert ("math-A", V1, v1_day, 2, 0) in before
    con.execute("DELETE FROM task_logs WHERE model = ?", [V1])  # v1's logs are pruned ...
    mine_failures(con)
    after = _rows(con, "SELECT task_id, model, log_date, attempts, passes FROM difficulty_history ORDER BY ALL")
    assert after == before  # ... its history stays, and still shapes the prior
    build_task_pool(con, heldout=HELDOUT)
    d = _rows(con, "SELECT difficulty FROM task_pool WHERE task_id = 'math-A'")[0][0]
    assert d == pytest.approx((2 + 4 * 0.75) / (4 + 4))
    assert v1_day < date(2026, 12, 1)


def test_config_validation_and_empty_warehouse(tmp_path):
    with pytest.raises(ValueError):
        MiningConfig(minhash_perms=30, lsh_bands=8)
    with pytest.raises(ValueError):
        MiningConfig(decontam_threshold=0)
    c = duckdb.connect(str(tmp_path / "empty.duckdb"))
    c.execute(TASK_LOGS_DDL)
    r = mine_failures(c)
    assert (r.records, r.failures) == (0, 0)
    p = build_task_pool(c, heldout=HELDOUT)
    assert p.pool == 0 and load_task_pool(c) == []


def test_mining_matches_simulated_ground_truth(tmp_path):
    """On demo traffic, the mined class of every failure is the one the simulator produced."""
    from flywheel.world.traffic import generate_records

    c = duckdb.connect(str(tmp_path / "sim.duckdb"))
    c.execute(TASK_LOGS_DDL)
    rows = []
    for i, r in enumerate(generate_records(date(2026, 12, 1), 1500, seed=3)):
        ts = datetime.fromisoformat(r["timestamp"].replace("Z", "+00:00"))
        rows.append((r["id"], ts, r["task_id"], r["domain"], r["model"], json.dumps(r["messages"]),
                     json.dumps(r["outcome"]), json.dumps(r["reference"]), json.dumps({"sim": r["sim"]}),
                     None, "sim.jsonl", i + 1, None, 0))
    _insert(c, rows)
    rep = mine_failures(c)
    pairs = _rows(c, """SELECT json_extract_string(l.extra, '$.sim.failure_mode'), f.failure_type, count(*)
                        FROM failure_cases f JOIN task_logs l USING (id) GROUP BY ALL""")
    assert all(truth == mined for truth, mined, _ in pairs), pairs
    assert {m for _, m, _ in pairs} == set(FAILURE_TYPES)
    assert rep.failures == sum(n for *_, n in pairs)


def test_every_model_of_the_latest_day_is_mined_unless_restricted(con):
    """A team's day served by two models: both models' failures reach the pool (counted per model), the
    earlier day's model does not; `model=` restricts mining to one."""
    other, prompt = "team-llama:v2", "Dan has 8 cups. Dan breaks 3. How many cups does Dan have now?"
    ts = T0 + timedelta(minutes=95)
    _insert(con, [(f"k{i}", ts, "math-K", "math", other, json.dumps(_msgs(prompt, "Answer: 4")),
                   json.dumps({"status": "failure", "passed": False}), json.dumps({"answer": "5"}), None, ts.date(),
                   "team.jsonl", i + 1, None, 0) for i in range(2)])
    mine_failures(con, MiningConfig())
    report = build_task_pool(con, MiningConfig(), heldout=HELDOUT)
    assert report.models == sorted([other, V2]) and report.model == other  # model: the most recent record's
    pool = {r[0] for r in con.execute("SELECT task_id FROM task_pool").fetchall()}
    assert "math-K" in pool and "math-A" in pool
    assert report.pool_by_model[other] == 1 and report.pool_by_model[V2] == len(pool) - 1
    assert pool_coverage(con)["math"][1] == report.pool_by_domain["math"]
    only = build_task_pool(con, MiningConfig(model=V2), heldout=HELDOUT)
    assert only.models == [V2] and "math-K" not in {r[0] for r in con.execute("SELECT task_id FROM task_pool").fetchall()}


def test_uniform_selection_pools_solved_tasks_too_in_an_order_no_outcome_sets(con):
    """The control of bench_ablation: every logged task a verifier can be built for (math-B, always solved,
    included), the same decontamination and near-duplicate removal, ranked by a hash of the id."""
    mine_failures(con)
    rep = build_task_pool(con, MiningConfig(selection="uniform"), heldout=HELDOUT)
    pool = {r[0]: r[1:] for r in _rows(con, "SELECT task_id, reason, rank FROM task_pool")}
    assert set(pool) == {"math-A", "math-B", "math-C", "code-F", "code-G", "agent-H", "agent-I"}
    assert {v[0] for v in pool.values()} == {"uniform"} and rep.reasons == {"uniform": 7}
    assert rep.decontaminated == 1 and rep.near_duplicates == 1  # math-E and math-D, as with failures
    ranked = [t for t, _ in sorted(pool.items(), key=lambda kv: kv[1][1])]
    for d in ("math", "code", "agent"):  # within a domain: the order of md5(task_id), not of difficulty
        ids = [t for t in ranked if t.startswith(d)]
        assert ids == sorted(ids, key=lambda t: hashlib.md5(t.encode()).hexdigest())
    assert {t.split("-")[0] for t in ranked[:3]} == {"math", "code", "agent"}  # domains still interleave
    again = build_task_pool(con, MiningConfig(selection="uniform"), heldout=HELDOUT)
    assert again.pool == rep.pool and _rows(con, "SELECT task_id FROM task_pool ORDER BY rank") == [
        (t,) for t in ranked]
    with pytest.raises(ValueError, match="selection"):
        MiningConfig(selection="random")
