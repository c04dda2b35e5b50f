"""The held-out evaluation set is decontaminated against the training pool (exact, case- and whitespace-blind)."""

from __future__ import annotations

from flywheel.evaluation.suites import EvalConfig, contamination, eval_tasks
from flywheel.tasks.suites import DOMAINS, train_suite


def test_eval_set_is_decontaminated_against_training_pool():
    tasks = eval_tasks(EvalConfig())
    pool = [t.prompt for d in DOMAINS for t in train_suite(d, 300)]
    rep = contamination(tasks, pool)
    assert rep.clean and rep.exact == () and rep.n_eval == len({t.task_id for v in tasks.values() for t in v})
    leaked = contamination(tasks, [*pool, "  " + tasks["code"][0].prompt.upper()])  # case/whitespace only
    assert not leaked.clean and leaked.exact == (tasks["code"][0].task_id,)
