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


def test_default_heldout_sizes_are_the_tasks_that_exist():
    """The default an evaluation shows (`flywheel evaluate --help`, EvalConfig) is what it evaluates: every
    built-in environment yields the held-out tasks it declares (issue 27: code declared 60, had 24)."""
    from flywheel.environments.builtin import BUILTIN_ENVIRONMENTS
    from flywheel.evaluation.suites import EvalConfig
    from flywheel.tasks.suites import HELDOUT_SIZE

    assert dict(EvalConfig().tasks_per_domain) == HELDOUT_SIZE
    for env in BUILTIN_ENVIRONMENTS:
        assert len(heldout_suite(env.name)) == HELDOUT_SIZE[env.name] == env.heldout_tasks, env.name
