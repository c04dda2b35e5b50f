"""Math verifier, red-team round: whose fault a timeout is, and answers given as content parts.

A timeout is the candidate's failure (reward 0) only when its input kept math-verify busy; a worker
starved of CPU by a loaded machine is an infrastructure error (VerifierInfraError, retried). Both
are produced for real here: pathological expressions, and a worker stopped or crowded off its CPU.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from flywheel.environments.math.verifier import MathVerifier, MathWorkerPool
from flywheel.verifiers.verdict import VerifierInfraError


@pytest.fixture(scope="module")
def one_worker():
    pool = MathWorkerPool(max_workers=1)
    yield pool
    pool.close()


@pytest.fixture
def solo(one_worker):
    """A verifier over a one-worker pool and that (warm) worker, so a test knows which process to starve."""
    mv = MathVerifier(timeout_s=0.5, pool=one_worker)
    assert mv.verify({"answer": "7"}, "Answer: 7").passed
    return mv, one_worker._all[0]


@pytest.mark.parametrize("response", [
    "Answer: 9^{9^{9^{9}}}",
    "Answer: 10^{10^{10^{10}}}",
    "Answer: (9^{9^{9}})!",
])
def test_a_pathological_short_answer_is_the_candidates_failure(solo, response):
    mv, _ = solo
    v = mv.verify({"answer": "7"}, response)
    assert not v.passed and v.reward == 0.0 and v.reason.startswith("timeout"), v
    assert v.details["cacheable"] is False
    assert mv.verify({"answer": "7"}, "Answer: 7").passed  # the busy worker was replaced


def test_a_stopped_worker_is_infrastructure_and_the_retry_passes(solo):
    mv, w = solo
    os.kill(w.proc.pid, signal.SIGSTOP)
    t0 = time.monotonic()
    with pytest.raises(VerifierInfraError, match="overloaded"):
        mv.verify({"answer": "7"}, "Answer: 7")
    assert time.monotonic() - t0 < 5
    assert mv.verify({"answer": "7"}, "Answer: 7").passed


def test_a_worker_paused_for_a_while_still_judges(solo):
    """Paused longer than the wall budget but resumed within the grace: the CPU deadline still counts."""
    mv, w = solo
    os.kill(w.proc.pid, signal.SIGSTOP)
    threading.Timer(0.8, os.kill, (w.proc.pid, signal.SIGCONT)).start()
    v = mv.verify({"answer": "7"}, "Answer: 7")
    assert v.passed, v
    assert not mv.verify({"answer": "7"}, "Answer: 8").passed


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs CPU affinity (Linux)")
def test_a_worker_crowded_off_its_cpu_is_infrastructure(solo):
    """Real load: the worker shares one CPU at nice 19 with two busy processes."""
    mv, w = solo
    cpu = min(os.sched_getaffinity(0))
    os.sched_setaffinity(w.proc.pid, {cpu})
    os.setpriority(os.PRIO_PROCESS, w.proc.pid, 19)
    hog = f"import os\nos.sched_setaffinity(0, {{{cpu}}})\nwhile True:\n    pass\n"
    hogs = [subprocess.Popen([sys.executable, "-c", hog]) for _ in range(2)]
    try:
        time.sleep(0.2)
        with pytest.raises(VerifierInfraError, match="overloaded"):
            MathVerifier(timeout_s=0.3, pool=mv.pool).verify({"answer": "7"}, "Answer: \\frac{14}{2}")
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    assert mv.verify({"answer": "7"}, "Answer: \\frac{14}{2}").passed


@pytest.mark.parametrize("shape", ["parts", "output_text_parts", "message", "messages", "parts_split_mid_answer"])
def test_answers_in_content_parts_are_judged(solo, shape):
    mv, _ = solo

    def wrap(ans):
        parts = [{"type": "text", "text": "Working... "}, {"type": "text", "text": f"\\boxed{{{ans}}}"}]
        if shape == "parts":
            return parts
        if shape == "output_text_parts":
            return [dict(p, type="output_text") for p in parts]
        if shape == "parts_split_mid_answer":
            return [{"type": "text", "text": "Answer: 4"}, {"type": "text", "text": str(ans)[1:]}]
        if shape == "message":
            return {"role": "assistant", "content": parts}
        return [{"role": "user", "content": [{"type": "text", "text": "Answer: 42"}]},
                {"role": "assistant", "content": parts}]
    assert mv.verify({"answer": "42"}, wrap(42)).passed, shape
    assert not mv.verify({"answer": "42"}, wrap(43)).passed, shape
    image = [{"type": "image_url", "image_url": {"url": "Answer: 42"}}]
    assert not mv.verify({"answer": "42"}, image).passed


@pytest.mark.parametrize("response", [
    "Final answer: 42. Correction: 43.",
    "Answer: 42. Wait, actually 43.",
    "\\boxed{42}\n\nOn second thought, 43.",
    "Answer: 42 (oops, 43)",
    "Answer: 42. Typo: it is 43.",
    "Answer: 42. Scratch that: 43.",
    "Answer: 42 -- I meant 43.",
])
def test_a_correction_after_the_final_answer_is_a_second_answer(solo, response):
    mv, _ = solo
    v = mv.verify({"answer": "42"}, response)
    assert not v.passed and v.reward == 0.0, v
    assert not mv.verify({"answer": "43"}, response).passed  # neither value is the stated one


@pytest.mark.parametrize("response", [
    "Answer: 42. Check: 6 \\times 7 = 42.",
    "Answer: 42\n\nWaiting is not needed: 6 \\cdot 7 = 42.",
    "Wait, let me recompute: 6 \\times 7 = 42. Answer: 42",  # a correction *before* the final answer is reasoning
    "I first got 41 (a typo). Answer: 42",
    "\\boxed{42}",
])
def test_honest_answers_around_correction_words_still_pass(solo, response):
    mv, _ = solo
    assert mv.verify({"answer": "42"}, response).passed, response
