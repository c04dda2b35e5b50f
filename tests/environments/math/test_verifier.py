"""Math verifier: extraction, math-verify equivalence, several-answer rejection, thread safety, timeouts."""

from __future__ import annotations

import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from flywheel.environments.math.answer import MAX_DIGIT_RUN, extract, normalise
from flywheel.environments.math.verifier import MathVerifier, MathWorkerPool, extract_candidates
from flywheel.tasks.suites import heldout_suite, train_suite
from flywheel.verifiers.common import TaskError
from flywheel.verifiers.verdict import VerifierInfraError


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


# --------------------------------------------------------------------------- red-team round (hardening)
@pytest.mark.parametrize("response", [
    "\\boxed{42} (or possibly 43)",
    "So the result is \\boxed{42}, possibly 43.",
    "\\boxed{42}\nOr maybe 43.",
    "\\boxed{42} or \\boxed{43}",
    "\\boxed{42}\n\\boxed{43}",
    "Answer: 42 or 43",
    "Answer: 42 (or 43)",
    "Answer: 42, possibly 43",
    "Answer: 42, perhaps 43",
    "Answer: 42. Though it might be 43.",
    "Answer: 42. I am not sure, it could be 43.",
    "Answer: 42. The answer is 43.",
    "The answer is 42; alternatively 43.",
    "Answer: 42 \\lor 43",
    "Answer: 42 \\mp 1",
    "Answer: 42. But 43 also works.",
    "\\boxed{42}\n43 is also correct.",
    "Answer: 42. Another valid answer is 43.",
])
def test_hedged_and_multiple_answers_fail(mv, response):
    v = mv.verify({"answer": "42"}, response)
    assert not v.passed and v.reward == 0.0, (response, v)


@pytest.mark.parametrize("response", [
    "Answer: 41 = 42",
    "Answer: 42 = 41",
    "\\boxed{41 = 42}",
    "Answer: x = 41 = 42",
    "Answer: 6 \\times 7 = 43 = 42",
    "Answer: 42 \\approx 41",  # math-verify alone reads only the left side of \approx
    "Answer: 41 \\approx 42",
    "Answer: 41 ≈ 42",
    "Answer: 42 < 43",
    "Answer: x \\geq 42",
    "Answer: = 42",
    "Answer: 41 := 42",
    "Answer: \\pi = 42",
    "Answer: e = 42",
    "Answer: \\infty = 42",
])
def test_false_equalities_and_relations_fail(mv, response):
    v = mv.verify({"answer": "42"}, response)
    assert not v.passed, (response, v)


@pytest.mark.parametrize("response", [
    "Answer: 42 = 42",
    "Answer: x = 42",
    "Answer: x_1 = 42",
    "Answer: \\theta = 42",
    "Answer: f(3) = 42",
    "Answer: \\text{total} = 42",
    "Answer: 6 \\times 7 = 42",
    "Answer: n = 6 \\cdot 7 = 42",
    "\\boxed{x = \\frac{84}{2}}",
    "Answer: 42 \\approx 42.0",
])
def test_true_equations_pass(mv, response):
    v = mv.verify({"answer": "42"}, response)
    assert v.passed, (response, v)


def test_a_relation_reference_keeps_relations(mv):
    assert mv.verify({"answer": "y = 2x + 1"}, "Answer: y = 2x + 1").passed
    assert mv.verify({"answer": "x \\geq 3"}, "Answer: x \\ge 3").passed
    assert not mv.verify({"answer": "y = 2x + 1"}, "Answer: y = 2x + 2").passed
    assert mv.verify({"answer": "3 \\pm 1"}, "Answer: 3 \\pm 1").passed  # the reference hedges: so may the answer


@pytest.mark.parametrize("response", [
    "Answer: ４２",
    "\\boxed{４２}",
    "Answer: ٤٢",  # Arabic-Indic digits
    "Answer: ４2",
    "The answer is not 41. Answer: 42",
    "The answer is 41? No, let me recheck.\nAnswer: 42",
    "Maybe the answer is 41... no.\n\\boxed{42}",
    "The answer is 40 or 41, hmm. Final answer: 42",
    "\\boxed{42}\n\nThis works because 6 times 7 is 42, or 7 times 6.",
    "Answer: 6² + 6",
    "Answer: −(−42)",
    [{"type": "text", "text": "6 times 7. Answer: 42"}],
    [{"type": "text", "text": "so the answer "}, {"type": "text", "text": "is 42"}],
    [{"role": "user", "content": "Answer: 41"},
     {"role": "assistant", "content": [{"type": "text", "text": "Answer: 42"}]}],
    {"role": "assistant", "content": [{"type": "output_text", "text": "\\boxed{42}"}]},
])
def test_honest_answers_pass(mv, response):
    v = mv.verify({"answer": "42"}, response)
    assert v.passed, (response, v)


def test_normalise_keeps_meaning():
    assert normalise("６²") == "6^{2}"  # NFKC alone would make it 62
    assert normalise("x₁₀ = ½") == "x_{10} = 1/2"
    assert normalise("plain ascii 42") == "plain ascii 42"


@pytest.mark.parametrize(("answer", "gold"), [
    ("\\frac{0}{0}", "42"), ("nan", "42"), ("\\text{NaN}", "42"), ("\\infty", "42"), ("-\\infty", "42"),
    ("42 + 0 \\cdot \\infty", "42"), ("\\frac{1}{0}", "42"), ("\\frac{0}{0}", "\\infty"), ("nan", "\\infty"),
])
def test_non_finite_answers_never_match(mv, answer, gold):
    v = mv.verify({"answer": gold}, f"Answer: {answer}")
    assert not v.passed, (answer, gold, v)


def test_infinity_matches_only_an_infinite_reference(mv):
    assert mv.verify({"answer": "\\infty"}, "Answer: \\infty").passed
    assert mv.verify({"answer": "(-\\infty, 3]"}, "Answer: (-\\infty, 3]").passed
    for gold in ("nan", "NaN", "\\frac{0}{0}"):
        with pytest.raises(TaskError, match="NaN"):
            mv.verify({"answer": gold}, "Answer: nan")


@pytest.mark.parametrize("response", [
    "Answer: 42\nCheck: " + "7" * 20_000,
    "7" * 200_000,
    "\ufdfa" * 100_000,  # NFKC expands this character 18-fold
    "x " + "1," * 99_000,
    "\\boxed{" * 28_000,
    "Answer: " * 25_000,
    "1 or " * 40_000,
    "the answer is 3. " * 11_000,
    "\\boxed{42} or " * 15_000,
    "." * 100_000 + " " * 99_000,
    "Answer: " + "(" * 199_000,
])
def test_degenerate_responses_fail_fast(mv, response):
    t0 = time.monotonic()
    v = mv.verify({"answer": "42"}, response)
    assert not v.passed and time.monotonic() - t0 < 2.0, (response[:40], v)


def test_extraction_is_linear_in_digit_runs():
    """The old hedge regex was quadratic: 5,000 digits took ~2 s, 20,000 digits 35 s."""
    for n in (MAX_DIGIT_RUN, 20_000):
        text = normalise("x " + ("9" * MAX_DIGIT_RUN + " a ") * (n // MAX_DIGIT_RUN) + " y")
        t0 = time.monotonic()
        extract(text)
        assert time.monotonic() - t0 < 0.2, n


def test_a_starved_worker_is_an_infrastructure_error_not_a_failure():
    """A worker that gets no CPU (stopped, as on an overloaded machine) times out without the input's fault."""
    pool = MathWorkerPool(max_workers=1)
    try:
        mv = MathVerifier(timeout_s=0.5, pool=pool)
        assert mv.verify({"answer": "7"}, "Answer: 7").passed
        (w,) = pool._all
        os.kill(w.proc.pid, signal.SIGSTOP)
        with pytest.raises(VerifierInfraError, match="overloaded"):
            mv.verify({"answer": "7"}, "Answer: 7")
        assert mv.verify({"answer": "7"}, "Answer: 7").passed  # replaced
        v = mv.verify({"answer": "7"}, "Answer: 9^{9^{9^{9}}}")  # busy on the input: the candidate's failure
        assert not v.passed and v.reason.startswith("timeout")
    finally:
        pool.close()
