"""code in simulated production: a coding assistant's users, and the made-up model's answers, whose failures
are run against the task's asserts so the logged tracebacks are real."""

from __future__ import annotations

import functools
import linecache
import random
import re
from dataclasses import dataclass
from typing import Any

from flywheel.environments.production import (
    REFUSALS,
    RUN_SLOT,
    ProductionProfile,
    compile_with_source,
    fill_run,
    format_exc,
    outcome,
)
from flywheel.environments.task import Task
from flywheel.tracebacks import failed_an_assert

_SOL_FILE = f"/sandbox/{RUN_SLOT}/solution.py"
_TEST_FILE = f"/sandbox/{RUN_SLOT}/test_solution.py"
_HARNESS_FRAME = f'  File "/sandbox/{RUN_SLOT}/harness.py", line 27, in <module>\n    check(candidate)\n'


@dataclass(frozen=True)
class CodeRun:
    """The result of running a response against a code task's asserts."""

    run: int
    passed: int
    error: str | None  # traceback text with RUN_SLOT placeholders, None when all passed


@functools.lru_cache(maxsize=4096)
def run_code(header: str, body: str, test: str, entry_point: str) -> CodeRun:
    """Run `header + body` against `test`'s asserts (each counted) and keep `check`'s traceback.

    Only ever called on bodies this module writes, never on model output.
    """
    ns: dict[str, Any] = {}
    try:
        exec(compile_with_source(header + body, _SOL_FILE), ns)  # noqa: S102 - our own bodies
        cand = ns[entry_point]
        asserts = [ln.strip() for ln in test.splitlines() if ln.strip().startswith("assert ")]
        passed = 0
        for a in asserts:
            try:
                exec(a, {"candidate": cand})  # noqa: S102
                passed += 1
            except Exception:
                pass
        tns: dict[str, Any] = {}
        exec(compile_with_source(test, _TEST_FILE), tns)  # noqa: S102
        try:
            tns["check"](cand)
            return CodeRun(len(asserts), passed, None)
        except Exception as e:  # the failure production saw
            return CodeRun(len(asserts), passed, format_exc(e, 1, _HARNESS_FRAME))
    finally:
        linecache.cache.pop(_SOL_FILE, None)
        linecache.cache.pop(_TEST_FILE, None)


def _code_param(header: str) -> str:
    m = re.search(r"def \w+\((\w+)", header)
    return m.group(1) if m else "x"


_CODE_BUGS: tuple[tuple[str, float], ...] = (
    ("    return {p} + None\n", 3.0),  # TypeError
    ("    return {p}_value\n", 2.0),  # NameError
    ("    return [{p}][1]\n", 2.0),  # IndexError
    ("    return {p}.values()\n", 1.5),  # AttributeError
    ("    return {{'value': {p}}}['result']\n", 1.0),  # KeyError
    ("    return len(str({p})) // 0\n", 1.0),  # ZeroDivisionError
    ("    return {name}({p})\n", 0.5),  # RecursionError
    ("    raise ValueError(f'unexpected input {{{p}!r}} for {{object()}}')\n", 1.0),  # address in message
)

_CODE_FAMILY_DIFFICULTY = {
    "add": 0.0, "times": 0.1, "sum_list": 0.1, "max_list": 0.2, "reverse_string": 0.2, "repeat": 0.3,
    "count": 0.4, "is_multiple_of": 0.5, "greater_than": 0.7, "clamp": 0.8,
}


_LEVEL_DIFFICULTY = {2: 0.6, 3: 0.8, 4: 0.85, 5: 0.95}
"""Levels past 1: the wider SFT level, then production's own levels (its weakness), hardest last."""


def difficulty(task: Task) -> float:
    """0 (easy) .. 1 (hard): a level-1 task's from its family, a later level's from the level."""
    level = int((task.meta or {}).get("level", 1))
    if level > 1:
        return _LEVEL_DIFFICULTY.get(level, 1.0)
    fam = str((task.meta or {}).get("family", ""))
    return next((v for k, v in _CODE_FAMILY_DIFFICULTY.items() if fam.startswith(k)), 0.5)


_MUTATIONS: tuple[tuple[str, str], ...] = (
    (r"\((\w+) \+ (\d+)\) \* ", r"\1 + \2 * "),  # a combination's parentheses forgotten
    (r" > ", " >= "), (r" < ", " <= "), (r" <= ", " < "), (r" \+ ", " - "), (r" - ", " + "), (r" \* ", " + "),
    (r" // ", " / "), (r"\[:(\d+)\]", r"[1:\1]"), (r"\[::-1\]", ""), (r"sum\(", "len("), (r"len\(", "sum("),
    (r"startswith", "endswith"), (r"endswith", "startswith"), (r"upper", "lower"),
)
"""Plausible slips of a model that nearly knows the answer: an operator, a bound, a parenthesis."""


def _near_miss(header: str, body: str, test: str, entry: str, rng: random.Random) -> str | None:
    """The gold body with one slip that fails the task's asserts (None: no slip fails them). A slip that raises
    (a TypeError on `sum(text)`) is a runtime error to the taxonomy, so it is no near miss."""
    slips = list(_MUTATIONS) + [(r"(?<![\w.])(\d+)(?!\w)", "+1")]
    rng.shuffle(slips)
    for pat, rep in slips:
        if rep == "+1":
            wrong = re.sub(pat, lambda m: str(int(m.group(1)) + 1), body, count=1)
        else:
            wrong = re.sub(pat, rep, body, count=1)
        if wrong != body and failed_an_assert(run_code(header, wrong, test, entry).error):
            return wrong
    return None


def reword(prompt: str, rng: random.Random) -> str:
    """A near-duplicate of a function header: the same code with a blank line before or after."""
    return rng.choice(["\n" + prompt, prompt + "\n\n"])


def respond(task: Task, mode: str, rng: random.Random) -> tuple[list[dict], dict]:
    ref = task.reference
    header, entry = task.prompt.lstrip("\n").rstrip("\n") + "\n", ref["entry_point"]
    p = _code_param(header)
    if mode == "success":
        return [{"role": "assistant", "content": task.solution}], outcome(
            mode, tests={"run": ref["test"].count("assert "), "passed": ref["test"].count("assert ")})
    if mode == "format_error":
        text = rng.choice([
            "You can solve this by returning the value computed from the input.",
            "Use a loop over the input and return the result at the end.",
            "Sure! The function should compute the result from its argument and return it.",
        ])
        return [{"role": "assistant", "content": text}], outcome(mode, tests={"run": 0, "passed": 0})
    if mode == "refused":
        return [{"role": "assistant", "content": rng.choice(REFUSALS)}], outcome(mode, tests={"run": 0, "passed": 0})
    if mode == "timeout":
        body = f"    while True:\n        {p} = {p}\n"
        return [{"role": "assistant", "content": f"```python\n{header}{body}```"}], outcome(
            mode, tests={"run": 0, "passed": 0}, latency_ms=10000,
            error="TimeoutError: sandbox execution exceeded the 10 s limit")
    if mode == "wrong_answer":
        near = _near_miss(header, ref["canonical_solution"], ref["test"], entry, rng) if (
            (task.meta or {}).get("level", 1) != 1 and ref.get("canonical_solution")) else None
        body = near or f"    return {p}\n"
        run = run_code(header, body, ref["test"], entry)
        if run.error is None:
            body = "    return None\n"
            run = run_code(header, body, ref["test"], entry)
    else:  # runtime_error
        bugs, weights = zip(*_CODE_BUGS, strict=True)
        body = rng.choices(bugs, weights)[0].format(p=p, name=entry)
        run = run_code(header, body, ref["test"], entry)
    error = fill_run(run.error or "", rng)
    return [{"role": "assistant", "content": f"```python\n{header}{body}```"}], outcome(
        mode, tests={"run": run.run, "passed": run.passed}, error=error)


PROFILE = ProductionProfile(
    system_prompt="You are a coding assistant. Reply with the complete Python function in a ```python block.",
    share=0.35, universe=200, base_logit=2.1,
    failure_weights={"wrong_answer": 0.4, "runtime_error": 0.35, "format_error": 0.1, "timeout": 0.08,
                     "refused": 0.07},
    difficulty=difficulty, respond=respond, reword=reword,
)
