"""math: templated word problems with numeric answers (SFT levels 1-3, production 4-6, test 7), judged by the
answer they state.

Everything math is here: the problems (`tasks.py`), answer extraction (`answer.py`), the verifier
(`verifier.py`, math-verify in worker processes), hack probes (`probes.py`) and failure types
(`failures.py`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

from flywheel.environments.base import Probe, sql_literal
from flywheel.environments.judging import require
from flywheel.environments.math.failures import MATH_ANSWER_RE, math_failure
from flywheel.environments.math.production import PROFILE
from flywheel.environments.math.tasks import PRODUCTION_LEVELS, TEST_LEVELS, math_level
from flywheel.environments.suite import SuiteEnvironment
from flywheel.environments.task import Task
from flywheel.environments.verdict import Verdict


class MathEnvironment(SuiteEnvironment):
    """Templated word problems with numeric answers; levels 1-3 (number size, then two operations)."""

    name = "math"
    production = PROFILE
    task_fields = ("prompt", "answer")
    levels_ = (1, 2, 3)
    heldout_tasks = 300
    production_levels = MappingProxyType(PRODUCTION_LEVELS)
    test_levels = TEST_LEVELS

    def suite(self, n: int, seed: int, level: int | None, keep: Callable[[Task], bool]) -> list[Task]:
        from flywheel.environments.math.tasks import math_suite

        return math_suite(n, seed, levels=(level,) if level else (1, 2, 3), keep=keep)

    def task_level(self, task: Task) -> int | None:
        return super().task_level(task) or math_level(task.prompt)

    def make_verifier(self, context: Any) -> Any:
        from flywheel.environments.math.verifier import MathVerifier

        return MathVerifier() if context is None else MathVerifier(timeout_s=context.math_timeout_s)

    def verifier_task(self, task: Task) -> dict[str, Any]:
        return {"task_id": task.task_id, "prompt": task.prompt, "answer": task.reference["answer"]}

    def wrong_response(self, task: Task) -> str:
        a = str(task.reference["answer"]).strip()
        return f"Answer: {int(a) + 1}" if a.lstrip("-").isdigit() else "Answer: 0"

    def probes(self, task: dict[str, Any]) -> list[Probe]:
        from flywheel.environments.math.probes import math_probes

        return math_probes(task)

    def task_from_log(self, task_id: str, prompt: str, reference: dict[str, Any]) -> dict[str, Any]:
        require(reference, "answer")
        return {"task_id": task_id, "prompt": prompt, "answer": str(reference["answer"])}

    def gold_response(self, prompt: str, reference: dict[str, Any]) -> str:
        return f"Answer: {reference['answer']}"

    def logged_solution(self, prompt: str, reference: dict[str, Any]) -> str:
        return f"Answer: {reference['answer']}" if "answer" in reference else ""

    def reference_sql(self, reference: str) -> str:
        return f"json_extract({reference}, '$.answer') IS NOT NULL"

    def missing_answer(self, response: str, tool_calls: int) -> bool:
        return not re.search(MATH_ANSWER_RE, response)

    def missing_answer_sql(self, response: str, tool_calls: str) -> str:
        return f"NOT regexp_matches({response}, {sql_literal(MATH_ANSWER_RE)})"

    def failure_type(self, task: dict[str, Any], response: str, verdict: Verdict) -> str:
        return math_failure(response, str(task.get("answer", "")), verdict)

