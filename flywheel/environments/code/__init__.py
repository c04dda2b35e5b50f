"""code: small Python functions in HumanEval's format, judged in the sandbox by their `check` (SFT levels 1-2,
production 3-5, test 6: see `tasks.py`).

Everything code is here: the task families (`tasks.py`), the verifier (`verifier.py`) and the trusted
judge it runs in the sandbox (`_harness*.py`, programs, never imported), hack probes (`probes.py`) and
failure types (`failures.py`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

from flywheel.environments.base import Probe, sql_literal
from flywheel.environments.code.failures import CODE_RE, code_failure
from flywheel.environments.code.production import PROFILE
from flywheel.environments.code.tasks import PRODUCTION_LEVELS, SFT_LEVELS, TEST_LEVELS
from flywheel.environments.judging import require
from flywheel.environments.suite import SuiteEnvironment
from flywheel.environments.task import Task
from flywheel.environments.verdict import Verdict


class CodeEnvironment(SuiteEnvironment):
    """Small Python functions in HumanEval's format, judged in the sandbox by their `check`."""

    name = "code"
    production = PROFILE
    task_fields = ("prompt", "entry_point", "test")
    levels_ = SFT_LEVELS
    heldout_tasks = 240
    production_levels = MappingProxyType(PRODUCTION_LEVELS)
    test_levels = TEST_LEVELS

    def suite(self, n: int, seed: int, level: int | None, keep: Callable[[Task], bool]) -> list[Task]:
        from flywheel.environments.code.tasks import code_suite

        return code_suite(n, seed, (level,) if level else SFT_LEVELS, keep=keep)

    def task_level(self, task: Task) -> int | None:
        from flywheel.environments.code.tasks import code_level

        return super().task_level(task) or code_level(task.prompt)

    def make_verifier(self, context: Any) -> Any:
        from flywheel.environments.code.verifier import CodeVerifier

        if context is None:
            return CodeVerifier()
        return CodeVerifier(sandbox=context.lazy_sandbox(), timeout_s=context.code_timeout_s)

    def verifier_task(self, task: Task) -> dict[str, Any]:
        return {"task_id": task.task_id, "prompt": task.prompt, "entry_point": task.reference["entry_point"],
                "test": task.reference["test"]}

    def wrong_response(self, task: Task) -> str:
        entry = task.reference["entry_point"]
        return f"```python\ndef {entry}(*args, **kwargs):\n    return None\n```"

    def probes(self, task: dict[str, Any]) -> list[Probe]:
        from flywheel.environments.code.probes import code_probes

        return code_probes(task)

    def task_from_log(self, task_id: str, prompt: str, reference: dict[str, Any]) -> dict[str, Any]:
        require(reference, "entry_point", "test")
        return {"task_id": task_id, "prompt": prompt, "entry_point": reference["entry_point"],
                "test": reference["test"]}

    def gold_response(self, prompt: str, reference: dict[str, Any]) -> str | None:
        if reference.get("canonical_solution"):
            return f"```python\n{prompt}{reference['canonical_solution']}```"
        if reference.get("solution"):
            return str(reference["solution"])
        return None

    def logged_solution(self, prompt: str, reference: dict[str, Any]) -> str:
        if reference.get("canonical_solution"):
            return f"```python\n{prompt}{reference['canonical_solution']}```"
        return ""

    def reference_sql(self, reference: str) -> str:
        return f"json_extract({reference}, '$.entry_point') IS NOT NULL AND json_extract({reference}, '$.test') IS NOT NULL"

    def missing_answer(self, response: str, tool_calls: int) -> bool:
        return not re.search(CODE_RE, response)

    def missing_answer_sql(self, response: str, tool_calls: str) -> str:
        return f"NOT regexp_matches({response}, {sql_literal(CODE_RE)})"

    def failure_type(self, task: dict[str, Any], response: str, verdict: Verdict) -> str:
        return code_failure(verdict.reason)

    def logged_outcome(self, details: dict[str, Any], tool_steps: int) -> dict[str, Any]:
        if "tests_run" not in details:
            return {}
        return {"tests": {"run": details.get("tests_run"), "passed": details.get("tests_passed")}}
