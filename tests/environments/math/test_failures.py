"""Math failure types on hand-written responses and on the base model's SFT noise, judged by the real verifier."""

from __future__ import annotations

import pytest

from flywheel.environments.math.failures import math_failure, scratchpad_check
from flywheel.environments.targets import scratchpad
from flywheel.evaluation.failures import failure_type
from flywheel.tasks.suites import heldout_suite
from flywheel.verifiers import score

TASK = {"prompt": "Ana has 12 apples. Ana gets 7 more. How many apples does Ana have now?", "answer": "19"}


@pytest.mark.parametrize("response, expected", [
    ("12+7: 2+7=9, 1+0=1 so 19. Answer: 19", ""),                      # right: passes
    ("12+7: 2+7=9, 1+0=1 so 19. Answer: 21", "answer_mismatch"),       # the base model's noise
    ("12 + 7 = 19. Answer: 18", "answer_mismatch"),                     # plain work, same slip
    ("12+7: 2+7=8, 1+0=1 so 18. Answer: 18", "arithmetic"),            # a digit step is wrong
    ("12+7: 2+7=9, 1+0=1 so 18. Answer: 18", "arithmetic"),            # digits right, result wrong
    ("12+7: 2+7=8, 1+0=1 so 18. Answer: 17", "arithmetic"),            # wrong work, and not copied
    ("12+6: 2+6=8, 1+0=1 so 18. Answer: 18", "setup"),                 # right sums of the wrong numbers
    ("Answer: 20", "wrong_answer"),                                      # no work shown
    ("12+7: 2+7=9, 1+0=1 so 18", "format"),                             # no final answer, last number wrong
    ("I am not sure how many apples", "format"),                        # no number at all
    ("12+7: 2+7=9, 1+0=1 so 19. Answer: 19 or 20", "format"),          # two answers at once
])
def test_math_failure_types_on_hand_written_responses(response, expected):
    verdict = score("math", TASK, response)
    assert failure_type("math", TASK, response, verdict) == expected, verdict.reason


def test_the_base_models_noise_is_answer_mismatch_and_a_broken_step_is_arithmetic():
    """The SFT noise (`sft_data`: the worked scratchpad, then a wrong `Answer:`) on real held-out tasks,
    two-operation ones included, is counted as answer_mismatch; the gold scratchpad passes."""
    tasks = heldout_suite("math")[:30]
    assert any(t.meta["level"] == 3 for t in tasks)
    for t in tasks:
        gold, answer = scratchpad(t.solution), t.reference["answer"]
        vt = t.verifier_task()
        assert failure_type("math", vt, gold, score("math", vt, gold)) == ""
        noisy = gold.replace(f"Answer: {answer}", f"Answer: {int(answer) + 2}")
        assert failure_type("math", vt, noisy, score("math", vt, noisy)) == "answer_mismatch", noisy
        last, wrong, steps = scratchpad_check(gold)
        assert (last, wrong) == (int(answer), False) and steps >= 1
    # a slip in the final operation's result, copied into the answer: arithmetic, not noise
    t = next(t for t in tasks if t.meta["level"] == 3)
    answer = t.reference["answer"]
    broken = scratchpad(t.solution).replace(f"so {answer}. Answer: {answer}",
                                            f"so {int(answer) + 1}. Answer: {int(answer) + 1}")
    assert broken != scratchpad(t.solution)
    assert math_failure(broken, answer, score("math", t.verifier_task(), broken)) == "arithmetic"
