"""Why a math sample failed, read from the response itself, and the taxonomy's format rule for math.

The tiny base model was built with a known defect (`flywheel.models.sft_data`: some SFT answers are the
right worked scratchpad followed by a wrong `Answer:`). RL that only teaches the policy to copy its
scratchpad into the answer removes `answer_mismatch` failures and leaves `arithmetic` ones; a report
that counts both shows whether a gain is that sharpening or better arithmetic.
"""

from __future__ import annotations

import re

from flywheel.environments.verdict import Verdict

MATH_ANSWER_RE = r"(?i)(answer\s*(is|:|=)\s*\$?\s*-?[0-9]|\\boxed\{)"
"""A final answer in one of the forms mining accepts (one regex for DuckDB's RE2 and Python's re)."""

MATH_TYPES = ("answer_mismatch", "arithmetic", "setup", "wrong_answer", "format")
"""answer_mismatch: the scratchpad's own last computed value is right, the final answer is not (the
noise the base model was trained with); arithmetic: a step of the scratchpad is computed wrong;
setup: every step is right but the work does not reach the answer (wrong operands, e.g. a number
misread from the prompt, or a wrong operation);
wrong_answer: a wrong final answer with no work shown; format: no single final answer."""

_MATH_FORMAT_REASONS = ("no final answer", "several", "empty final answer", "final answer too long",
                        "response too long", "answer could not be compared")
_ANSWER_MARK = re.compile(r"(?i)\banswer\**\s*(?::|\bis\b)")
_STEP = re.compile(r"(\d+)\s*([+\-*])\s*(\d+)(?:\s*\+\s*(\d+))?\s*=\s*(-?\d+)")
"""`a op b = r` (plain work) and the scratchpad's digit steps, with a carry: `7+5+1=13`, `3*4+1=13`."""
_WORKED = re.compile(r"(\d+)\s*([+\-*])\s*(\d+)\s*:[^:]*?\bso\s+(-?\d+)")
"""A digit-by-digit operation: `x+y: <digit steps> so z`."""
_VALUE = re.compile(r"(?:=|\bso\b)\s*(-?\d+)")

def _apply(a: int, op: str, b: int) -> int:
    return a + b if op == "+" else a - b if op == "-" else a * b


def _same(value: str, gold: str) -> bool:
    try:
        return float(value) == float(gold)
    except ValueError:
        return value.strip() == gold.strip()


def scratchpad_check(work: str) -> tuple[int | None, bool, int]:
    """(last value the work computed, whether any step is computed wrong, how many steps it has)."""
    wrong, steps = False, 0
    for a, op, b, carry, r in _STEP.findall(work):
        steps += 1
        wrong |= _apply(int(a), op, int(b)) + int(carry or 0) != int(r)
    for a, op, b, r in _WORKED.findall(work):
        steps += 1
        wrong |= _apply(int(a), op, int(b)) != int(r)
    values = _VALUE.findall(work)
    return (int(values[-1]) if values else None), wrong, steps


def math_failure(response: str, gold: str, verdict: Verdict) -> str:
    """The failure type (one of `MATH_TYPES`) of a failed math sample."""
    method = str(verdict.details.get("method", ""))
    if verdict.reason.startswith(_MATH_FORMAT_REASONS) or not ("answer" in method or "boxed" in method):
        return "format"
    marks = list(_ANSWER_MARK.finditer(response))
    work = response[: marks[-1].start()] if marks else response
    last, wrong_step, steps = scratchpad_check(work)
    if last is not None and _same(str(last), gold):
        return "answer_mismatch"
    if wrong_step:
        return "arithmetic"
    return "setup" if steps else "wrong_answer"
