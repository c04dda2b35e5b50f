"""Task suites: deterministic, split cleanly, and every gold solution is well formed."""

from __future__ import annotations

from flywheel.tasks.suites import DOMAINS, heldout_suite, train_suite


def test_suites_are_deterministic_and_disjoint():
    for d in DOMAINS:
        a, b = train_suite(d, 50), train_suite(d, 50)
        assert [t.task_id for t in a] == [t.task_id for t in b]
        held = {t.prompt for t in heldout_suite(d)}
        assert held and not held & {t.prompt for t in train_suite(d, 500)}


def test_code_gold_solutions_pass_their_tests():
    tasks = train_suite("code", 40)
    assert len(tasks) == 40
    for t in tasks:
        ns: dict = {}
        exec(t.prompt + t.reference["canonical_solution"], ns)
        exec(t.reference["test"], ns)
        ns["check"](ns[t.reference["entry_point"]])
