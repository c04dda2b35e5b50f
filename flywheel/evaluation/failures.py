"""Why a sample failed: one failure type per failing sample, so a report can show what training changed.

Math is classified from the response itself, because the tiny base model was built with a known
defect (`flywheel.models.sft_data`: some SFT answers are the right worked scratchpad followed by a
wrong `Answer:`). RL that only teaches the policy to copy its scratchpad into the answer removes
`answer_mismatch` failures and leaves `arithmetic` ones; a report that counts both shows whether a
gain is that sharpening or better arithmetic. Code and agent failures are the verifier's own reason,
reduced to a class (the reason text carries line numbers, counts and item names).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from flywheel.verifiers.verdict import Verdict

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

CODE_CLASSES = (
    ("syntax error", "syntax_error"), ("solution does not load", "load_error"),
    ("assertion failed", "wrong_output"), ("test raised", "runtime_error"), ("timeout", "timeout"),
    ("killed by the sandbox", "killed"), ("candidate process", "crash"), ("candidate broke", "protocol"),
    ("candidate sent", "protocol"), ("response too long", "too_long"), ("code too long", "too_long"),
    ("forged verdict", "tampering"), ("work dir tampered", "tampering"), ("test code was altered", "tampering"),
    ("judge exited", "tampering"),
)
"""Prefix of the code verifier's (and its judge's) failure reason -> failure type."""
AGENT_CLASSES = (
    ("no tool calls", "no_tool_calls"), ("episode not finished", "not_finished"),
    ("goal not reached", "goal_not_reached"), ("changed items outside the goal", "side_effects"),
    ("too many tool calls", "too_many_calls"), ("response too long", "too_long"),
    ("malformed messages", "format"), ("response must be", "format"),
)
"""Prefix of the agent verifier's failure reason -> failure type (illegal calls are split below)."""


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


def reason_class(domain: str, reason: str) -> str:
    """The failure type of a failed code or agent verdict, from the verifier's reason."""
    if domain == "agent" and reason.startswith("illegal call"):
        detail = reason.split(":", 1)[-1].strip()
        if detail.startswith("tool call"):
            return "malformed_call"
        if "not offered" in detail or detail.startswith("unknown tool"):
            return "unknown_tool"
        return "call_after_finish" if "after the episode ended" in detail else "bad_arguments"
    table = CODE_CLASSES if domain == "code" else AGENT_CLASSES
    return next((cls for prefix, cls in table if reason.startswith(prefix)), "other")


def failure_type(domain: str, task: dict, response: str, verdict: Verdict) -> str:
    """"" for a passing sample; else why it failed (math: `MATH_TYPES`; code/agent: the reason's class)."""
    if verdict.passed:
        return ""
    if domain == "math":
        return math_failure(response, str(task.get("answer", "")), verdict)
    if domain not in ("code", "agent"):  # an environment's domain: its own label, else its reason's head
        label = verdict.details.get("failure_type") or verdict.reason.split(":", 1)[0]
        return re.sub(r"[^a-z0-9]+", "_", str(label).lower()).strip("_")[:40] or "other"
    return reason_class(domain, verdict.reason)


def count_failures(types: Iterable[str]) -> dict[str, int]:
    """Failing samples per type, most frequent first (passing samples, "", are not counted)."""
    return dict(Counter(t for t in types if t).most_common())
