"""Coding sessions logged in OpenAI tool-call format ingest and mine into the `repo` domain: a failed
session becomes a pool task the repo verifier judges, with the known fix as its gold solution."""

from __future__ import annotations

import json

import duckdb

from flywheel.environments.repo.env import RepoEnvironment
from flywheel.environments.repo.generator import generate, render
from flywheel.environments.repo.sessions import gold_text, session_record, to_messages
from flywheel.environments.repo.spec import RepoSpec
from flywheel.environments.repo.tools import RepoState
from flywheel.logs.ingest import ingest
from flywheel.mining import load_task_pool, mine


def _session(task, text: str, passed: bool, i: int) -> dict:
    rec = session_record(task, to_messages(task.prompt, text), "tiny-v1",
                         {"passed": passed, "status": "success" if passed else "failure"})
    return {**rec, "id": f"s-{i}", "timestamp": f"2026-12-01T10:00:0{i % 10}Z"}


def _submitted_untouched(task) -> str:
    return render(RepoState.start(RepoSpec.from_reference(task.reference).snapshot), [("submit", {})])


def test_failed_coding_sessions_mine_into_repo_tasks_whose_known_fix_verifies(tmp_path):
    tasks = generate("train", 3, seed=21)
    lines = []
    for i, t in enumerate(tasks):  # each task: one failed session, then (the first two) one that passed
        lines.append(_session(t, _submitted_untouched(t), False, 2 * i))
        if i < 2:
            lines.append(_session(t, gold_text(t.reference), True, 2 * i + 1))
    src = tmp_path / "sessions.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in lines) + "\n")
    wh = tmp_path / "warehouse.duckdb"
    rep = ingest(src, wh)
    assert (rep.ingested, rep.quarantined) == (len(lines), 0)
    con = duckdb.connect(str(wh))
    _, pool = mine(con)
    assert pool.pool_by_domain.get("repo") == 3, pool
    mined = load_task_pool(con, domains=["repo"])
    assert sorted(t.task_id for t in mined) == sorted(t.task_id for t in tasks)
    env = RepoEnvironment()
    for t in mined:
        assert t.solution == gold_text(t.reference) != ""
        assert t.meta["failed_response"]  # the logged failing session, as a verifier would judge it
        assert env.verify(t, t.solution).reward == 1.0
        assert env.verify(t, t.meta["failed_response"]).reward == 0.0
