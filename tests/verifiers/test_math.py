"""Math verifier: extraction, math-verify equivalence, several-answer rejection, thread safety, timeouts."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from flywheel.tasks.suites import heldout_suite, train_suite
from flywheel.verifiers.common import TaskError
from flywheel.verifiers.math import MathVerifier, MathWorkerPool, extract_candidates


@pytest.fixture(scope="module")
def mv():
    pool = MathWorkerPool(max_workers=2)
    yield MathVerifier(timeout_s=5.0, pool=pool)
    pool.close()


def test_gold_solutions_pass_and_wrong_answers_fail(mv):
    tasks = train_suite("math", 15) + heldout_suite("math", 5)
    for t in tasks:
        task = t.verifier_task()
        assert mv.verify(task, t.solution).reward == 1.0, t.solution
        wrong = f"Answer: {int(t.reference['answer']) + 1}"
        v = mv.verify(task, wrong)
        assert not v.passed and v.reward == 0.0 and "does not match" in v.reason


@pytest.mark.parametrize("response", [
    "so the total is \\boxed{7}.",
    "**Answer:** 7.",
    "The answer is 7",
    "Final answer: $7$",
    "3 + 4 = 7",  # no marker: the last number
    "Answer: 7 apples",
    "Answer: \\frac{14}{2}",
    "Answer: 7.0",
    "Answer: x = 7",
    "\\boxed{7} ... Answer: 7",  # two markers that agree
    "Let's find the answer: first compute 3+4=7. Answer: 7",
    "The answer is $7$. I am confident.",
    "Thus, answer: 7",
])
def test_answer_formats_accepted(mv, response):
    v = mv.verify({"prompt": "p", "answer": "7"}, response)
    assert v.passed, (response, v)


def test_equivalence_comes_from_math_verify(mv):
    assert mv.verify({"answer": "0.5"}, "Answer: \\frac{1}{2}").passed
    assert mv.verify({"answer": "\\frac{1}{2}"}, "Answer: 0.5").passed
    assert mv.verify({"answer": "x^2 + 1"}, "\\boxed{1 + x^2}").passed
    assert mv.verify({"answer": "\\{1, 2\\}"}, "Answer: \\{2, 1\\}").passed
    assert not mv.verify({"answer": "0.5"}, "Answer: 0.6").passed


@pytest.mark.parametrize("response", [
    "Answer: 3 or 7",
    "\\boxed{3} \\boxed{7}",
    "\\boxed{7}\nAnswer: 3",
    "Answer: 7\nAnswer: 3",
    "Answer: 3, 7",
    "Answer: \\{3, 7\\}",
    "It is either 3 or 7",
    "Answer: 7 \\pm 1",
    "Answer: 7 ± 1",
    "\\boxed{3 \\text{ or } 7}",
    "Answer: 3. Answer: 7",
    "The answer is 3. The answer is 7",
    "Answer: 3, no wait, Answer: 7",
])
def test_several_candidate_answers_fail(mv, response):
    v = mv.verify({"answer": "7"}, response)
    assert not v.passed and v.reward == 0.0, (response, v)


def test_no_answer_and_junk_fail(mv):
    assert mv.verify({"answer": "7"}, "I do not know").reason == "no final answer found"
    assert not mv.verify({"answer": "7"}, "").passed
    assert not mv.verify({"answer": "7"}, "x" * 300_000).passed
    assert not mv.verify({"answer": "7"}, "Answer: seven").passed


def test_extraction_methods():
    assert extract_candidates("a \\boxed{\\frac{1}{2}} b") == ("boxed", ["\\frac{1}{2}"])
    assert extract_candidates("Answer: 5.")[1] == ["5"]
    assert extract_candidates("first 3 then 12")[1] == ["12"]
    assert extract_candidates("nothing")[1] == []


def test_task_without_answer_is_a_task_error(mv):
    with pytest.raises(TaskError):
        mv.verify({"prompt": "p"}, "Answer: 1")


def test_works_from_threads_where_math_verify_alone_does_not(mv):
    from math_verify import parse

    with ThreadPoolExecutor(2) as ex:  # control: math-verify's signal timeout refuses worker threads
        with pytest.raises(ValueError, match="thread"):
            ex.submit(parse, "$7$").result()
    tasks = train_suite("math", 8)
    with ThreadPoolExecutor(4) as ex:
        verdicts = list(ex.map(lambda t: mv.verify(t.verifier_task(), t.solution), tasks))
    assert all(v.passed for v in verdicts)


def test_pathological_answer_times_out_and_the_pool_recovers(mv):
    fast = MathVerifier(timeout_s=1.0, pool=mv.pool)
    t0 = time.monotonic()
    v = fast.verify({"answer": "7"}, "Answer: 9^{9^{9^{9}}}")  # sympy would compute for minutes
    assert not v.passed and v.reason.startswith("timeout") and v.details["cacheable"] is False
    assert time.monotonic() - t0 < 10
    assert fast.verify({"answer": "7"}, "Answer: 7").passed  # the hung worker was replaced
