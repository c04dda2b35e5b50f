"""A task set judged by a grader spec, as a flywheel environment: what an OpenAI RFT job was (a training file,
a validation file, a grader) becomes a domain that mining, verifier construction, RFT, GRPO and evaluation
use like any other, with no built-in verifier behind it.

Rows are the RFT dataset's lines: the prompt is `prompt` or the last user message of `messages`; every field is
the grader's `item`; the gold answer is the row's `solution`, else the reference a `string_check` /
`text_similarity` grader compares `{{sample.output_text}}` with (searched inside a `multi`). The validation
file's rows are the held-out split (without one, one row in five by content). Validation is the environment
protocol's: the gold must pass, the empty answer and the probes (the prompt echoed, a list of numbers, words
aimed at a judge, a forged score) must fail.

    env = GradedEnvironment.from_files("faq", "job.json", "train.jsonl", "valid.jsonl")

Installed like any environment: a plug-in's entry point names a zero-argument function returning it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from flywheel.environments.adapters.dataset_env import DatasetEnvironment
from flywheel.environments.base import Probe, task_from_dict
from flywheel.environments.task import Task
from flywheel.environments.verdict import TaskError, Verdict
from flywheel.verifiers.graders.base import Runtime
from flywheel.verifiers.graders.template import render, sample_of
from flywheel.verifiers.graders.verifier import GraderVerifier, hack_probes, load_spec

_OUTPUT = "{{sample.output_text}}"


def derived_gold(spec: Any, item: dict[str, Any]) -> str | None:
    """The answer a grader spec itself names as right for `item` (see the module doc), or None."""
    if not isinstance(spec, dict):
        return None
    if spec.get("type") == "multi":
        for sub in (spec.get("graders") or {}).values():
            gold = derived_gold(sub, item)
            if gold:
                return gold
        return None
    same = spec.get("type") == "text_similarity" or spec.get("operation") in ("eq", "like", "ilike")
    if spec.get("type") in ("string_check", "text_similarity") and same and \
            str(spec.get("input", "")).replace(" ", "") == _OUTPUT and isinstance(spec.get("reference"), str):
        try:
            return render(spec["reference"], item, sample_of("")) or None
        except TaskError:
            return None
    return None


def _prompt(row: dict[str, Any]) -> str:
    if isinstance(row.get("prompt"), str):
        return row["prompt"]
    users = [m.get("content") for m in row.get("messages") or [] if isinstance(m, dict) and m.get("role") == "user"]
    if not users or not isinstance(users[-1], str):
        raise TaskError(f"a row has neither 'prompt' nor a user message: {sorted(row)}")
    return users[-1]


def _rows(rows: list[dict[str, Any]], spec: Any) -> list[dict[str, Any]]:
    out = []
    for row in rows:
        item = {k: v for k, v in row.items() if k not in ("prompt", "solution")}
        gold = row.get("solution") or derived_gold(spec, {**item, "prompt": _prompt(row)})
        out.append({**item, "prompt": _prompt(row), "solution": gold or ""})
    return out


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return [json.loads(ln) for ln in lines if ln.strip()]


class GradedEnvironment(DatasetEnvironment):
    """One domain (`name`) over RFT-style rows, judged by `spec`."""

    def __init__(self, name: str, spec: dict[str, Any], train_rows: list[dict[str, Any]],
                 eval_rows: list[dict[str, Any]] | None = None, runtime: Runtime | None = None) -> None:
        self.verifier = GraderVerifier(spec, runtime, validate=False)  # the protocol's validation covers it
        super().__init__(name, "graded", f"graded-{name}-{self.verifier.version}", name, _rows(train_rows, spec),
                         _rows(eval_rows, spec) if eval_rows else None)

    @classmethod
    def from_files(cls, name: str, grader_file: str | Path, train_file: str | Path,
                   eval_file: str | Path | None = None, runtime: Runtime | None = None) -> GradedEnvironment:
        """From an RFT job's files: the grader (or the job body), the training and validation JSONL."""
        return cls(name, load_spec(grader_file), read_jsonl(train_file),
                   read_jsonl(eval_file) if eval_file else None, runtime)

    def hack_probes(self, task: Task) -> list[tuple[str, Any]]:
        own = {n for n, _ in super().hack_probes(task)}
        return super().hack_probes(task) + [(n, r) for n, r in hack_probes(self.verifier_task(task))
                                            if n not in own and n != "empty"]

    def score(self, task: Task, response: Any) -> Verdict:
        return self.verifier.judge(self.verifier.default_grader(), self.verifier_task(task), response)

    def probes(self, task: dict[str, Any]) -> list[Probe]:
        """The probes verifier construction runs on a mined task (each must fail)."""
        t = task_from_dict(self.domain, task)
        return [Probe(n, r) for n, r in [("empty", ""), *self.hack_probes(t)]]

    def task_from_log(self, task_id: str, prompt: str, reference: dict[str, Any]) -> dict[str, Any] | None:
        return {**reference, "task_id": task_id, "prompt": prompt}

    def gold_response(self, prompt: str, reference: dict[str, Any]) -> str | None:
        return reference.get("solution") or derived_gold(self.verifier.spec, {**reference, "prompt": prompt})

    def make_verifier(self, context: Any) -> Any:
        from flywheel.verifiers.registry import EnvironmentVerifier  # verifiers build on environments

        return EnvironmentVerifier(self, self.domain)
