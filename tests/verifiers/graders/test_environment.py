"""An OpenAI RFT job's files (grader, training and validation JSONL) installed as a plug-in are a flywheel
environment with no built-in verifier: listed, split, validated (gold from the grader's own reference), its
mined tasks build validated verifiers, and the grader drives an RFT turn of the tiny model."""

from __future__ import annotations

import json

import pytest

from flywheel.cli import main
from flywheel.environments.base import validate
from flywheel.tasks.suites import domain_suite
from flywheel.verifiers.batch import score, score_batch
from flywheel.verifiers.graders.environment import GradedEnvironment, derived_gold
from flywheel.verifiers.registry import VerifierRegistry

ITEM = {"reference_answer": "Paris"}


def test_derived_gold() -> None:
    exact = {"type": "string_check", "name": "e", "input": "{{ sample.output_text }}",
             "reference": "{{item.reference_answer}}", "operation": "eq"}
    assert derived_gold(exact, ITEM) == "Paris"
    assert derived_gold(dict(exact, operation="ne"), ITEM) is None
    assert derived_gold({"type": "multi", "graders": {"p": {"type": "python"}, "e": exact}}, ITEM) == "Paris"
    assert derived_gold({"type": "python", "source": "def grade(s, i): return 1"}, ITEM) is None


def test_installed_listed_split_and_validated(graded_faq, capsys) -> None:
    env = graded_faq.for_domain("faq")
    assert env.family == "graded" and graded_faq.errors == []
    assert (env.task_count("faq", "train"), env.task_count("faq", "heldout")) == (15, 5)
    assert main(["envs", "list", "--json"]) == 0
    assert any(e["name"] == "faq" for e in json.loads(capsys.readouterr().out)["environments"])
    tasks = domain_suite("faq", 15, seed=0)
    assert all(validate(env, t).ok for t in tasks) and tasks[0].prompt.startswith("What is the capital of")
    items = [("faq", t.verifier_task(), r) for t in tasks[:2] for r in (t.solution, f"It is {t.solution}.", "Pariss")]
    v = score_batch(items, registry=VerifierRegistry(environments=graded_faq))
    assert [x.passed for x in v[:2]] == [True, True] and not v[2].passed


def test_a_hackable_grader_fails_validation() -> None:
    contains = {"type": "string_check", "name": "c", "input": "{{sample.output_text}}",
                "reference": "{{item.n}}", "operation": "like"}
    env = GradedEnvironment("nums", contains, [{"prompt": f"Pick {n}", "n": str(n)} for n in range(10)])
    results = [validate(env, t) for t in env.tasks("nums", "train", 10, 0)]
    assert results and not any(r.ok for r in results)
    assert all(any(f.startswith("hack:many_numbers scored 1.0") for f in r.failures) for r in results)


def test_the_grader_drives_an_rft_turn(graded_faq, tiny_model_dir, flywheel_home, seed_mlflow_db, log_gold) -> None:
    from flywheel.train.api import train_policy
    from flywheel.train.config import TrainConfig
    from flywheel.train.rft.config import RftConfig

    seed_mlflow_db(flywheel_home)
    tasks = domain_suite("faq", 6, seed=0)
    log_gold(flywheel_home, tasks)  # production's logged successes, re-verified by the grader
    rft = RftConfig(tasks_per_domain={"faq": 6}, samples_per_task=2, max_new_tokens=16, steps=2, batch_size=4,
                    include_logs=True)
    cfg = TrainConfig(stage="rft", steps=1, prompts_per_step=2, group_size=2, max_new_tokens=16, dev_every=0,
                      domain_weights={"faq": 1.0}, replay_tasks_per_domain=0, checkpoint_every=0)
    reg = VerifierRegistry(environments=graded_faq)  # the process-wide one predates this test's install
    res = train_policy(cfg, tiny_model_dir, "tiny-quick", paths=flywheel_home, tasks=tasks, rft=rft,
                       score_fn=lambda d, t, r: score(d, t, r, registry=reg))
    assert res.finished and res.steps_done == 2 and res.sources["rft/log_passed"] >= 6
    assert all(d == "faq" for d, _, _ in res.task_counts.values())


@pytest.mark.parametrize("bad", ["Lyon", ""])
def test_wrong_answers_fail(graded_faq, bad) -> None:
    t = domain_suite("faq", 1, seed=3)[0]
    assert not graded_faq.for_domain("faq").verify(t, bad).passed


def test_mined_tasks_build_validated_verifiers(graded_faq) -> None:
    import duckdb

    from flywheel.mining.pool import TASK_POOL_COLUMNS
    from flywheel.verifiers.construct import ConstructConfig, build_verifiers, valid_tasks

    con = duckdb.connect(":memory:")
    con.execute("CREATE OR REPLACE TABLE task_pool (" + ", ".join(f"{c} {t}" for c, t in TASK_POOL_COLUMNS) + ")")
    rows = []
    for i, t in enumerate(domain_suite("faq", 3, seed=1)):
        ref = {k: v for k, v in t.verifier_task().items() if k not in ("task_id", "prompt")}
        rows.append((t.task_id, "faq", t.prompt, json.dumps(ref), "Lyon", 4, 1, 0.25, 0.7, "frontier", i + 1))
    ref = {"reference_answer": "Paris", "messages": []}  # its logged "failure" is the right answer: refused
    rows.append(("bad-log", "faq", "What is the capital of France?", json.dumps(ref), "Paris", 4, 1, 0.25, 0.7,
                 "frontier", 9))
    con.executemany("INSERT INTO task_pool VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    report = build_verifiers(con, ConstructConfig(concurrency=2), registry=VerifierRegistry(environments=graded_faq))
    assert (report.valid, report.invalid) == (3, 1) and report.by_reason.get("accepts the logged failing response") == 1
    assert {d for d, _ in valid_tasks(con)} == {"faq"}
    con.close()
