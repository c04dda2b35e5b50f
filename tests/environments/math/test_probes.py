"""Math reward hacking: every probe fails; the hedge/equation attacks are real (plain math-verify falls for them)."""

from __future__ import annotations

from flywheel.environments.math.probes import math_probes
from flywheel.environments.math.verifier import MathVerifier, MathWorkerPool
from flywheel.tasks.suites import train_suite


def test_math_probes_all_fail():
    pool = MathWorkerPool(max_workers=1)
    try:
        mv = MathVerifier(pool=pool)
        for t in train_suite("math", 4):
            task = t.verifier_task()
            assert mv.verify(task, t.solution).passed
            for p in math_probes(task):
                v = mv.verify(task, p.response)
                assert not v.passed, (p.name, p.response, v)
    finally:
        pool.close()


def test_math_attacks_are_real_against_plain_math_verify():
    """math-verify's own extraction (the first answer it finds) falls for the hedge/equation probes."""
    from math_verify import parse, verify

    task = train_suite("math", 1)[0].verifier_task()
    gold = parse(f"${task['answer']}$", parsing_timeout=None)
    real = {"hedge_after_box", "hedge_after_answer", "hedge_in_answer", "false_equation", "approx_equation"}
    fooled = {p.name for p in math_probes(task) if p.name in real
              and verify(gold, parse(p.response, parsing_timeout=None), timeout_seconds=None)}
    assert fooled == real
    assert not verify(gold, parse(f"Answer: {int(task['answer']) + 1}", parsing_timeout=None), timeout_seconds=None)
