"""A grader spec in OpenAI's JSON shape -> a grader object (`build_grader`), refusing a malformed spec with the
field named (`TaskError`), before anything is graded.

Kinds: `string_check` and `text_similarity` (native, `text.py`), `python` (the sandbox, `python_grader.py`),
`score_model` / `label_model` (a judge endpoint, `model_grader.py`), `multi` (named sub-graders combined by
`calculate_output`, `formula.py`). Each exposes `name`, `kind`, its raw score range (`low`, `high`), `binary`,
`pass_threshold` and `grade(item, sample) -> Graded`.
"""

from __future__ import annotations

import re
from typing import Any

from flywheel.environments.verdict import TaskError
from flywheel.verifiers.graders.base import Graded, Runtime, need, threshold
from flywheel.verifiers.graders.formula import Formula
from flywheel.verifiers.graders.model_grader import LabelModelGrader, ScoreModelGrader
from flywheel.verifiers.graders.python_grader import PythonGrader
from flywheel.verifiers.graders.template import NAMESPACES, paths, render
from flywheel.verifiers.graders.text import STRING_OPS, metric, string_check

MAX_DEPTH = 4
"""`multi` graders nest at most this deep."""


def _check_templates(where: str, *templates: str) -> None:
    """Every `{{...}}` names the item or the sample (checked when the spec is built, not on the first grade)."""
    for t in templates:
        for p in paths(t):
            if re.split(r"[.\[]", p, maxsplit=1)[0] not in NAMESPACES:
                raise TaskError(f"{where}: template {{{{{p}}}}} names neither item.* nor sample.*")


class StringCheckGrader:
    """`{"type": "string_check", "name", "input", "reference", "operation": eq | ne | like | ilike}`."""

    kind, low, high, binary, pass_threshold = "string_check", 0.0, 1.0, True, None

    def __init__(self, spec: dict[str, Any], runtime: Runtime) -> None:
        where = f"string_check grader {spec.get('name', '')!r}"
        self.name = str(spec.get("name") or "string_check")
        self.input, self.reference = need(spec, "input", str, where), need(spec, "reference", str, where)
        self.op = need(spec, "operation", str, where)
        if self.op not in STRING_OPS:
            raise TaskError(f"{where}: operation must be one of {list(STRING_OPS)}, got {self.op!r}")
        _check_templates(where, self.input, self.reference)

    def grade(self, item: dict[str, Any], sample: dict[str, Any]) -> Graded:
        text, ref = render(self.input, item, sample), render(self.reference, item, sample)
        score = string_check(self.op, text, ref)
        return Graded(score, f"string_check {self.name!r}: {self.op} {'holds' if score else 'fails'}")


class TextSimilarityGrader:
    """`{"type": "text_similarity", "name", "input", "reference", "evaluation_metric", "pass_threshold"}`."""

    kind, low, high, binary = "text_similarity", 0.0, 1.0, False

    def __init__(self, spec: dict[str, Any], runtime: Runtime) -> None:
        where = f"text_similarity grader {spec.get('name', '')!r}"
        self.name = str(spec.get("name") or "text_similarity")
        self.input, self.reference = need(spec, "input", str, where), need(spec, "reference", str, where)
        self.metric_name = need(spec, "evaluation_metric", str, where)
        self.metric = metric(self.metric_name)
        self.pass_threshold = threshold(spec, where)
        _check_templates(where, self.input, self.reference)

    def grade(self, item: dict[str, Any], sample: dict[str, Any]) -> Graded:
        score = self.metric(render(self.input, item, sample), render(self.reference, item, sample))
        return Graded(score, f"text_similarity {self.name!r}: {self.metric_name} {score:.3f}")


class MultiGrader:
    """`{"type": "multi", "name", "graders": {name: spec, ...}, "calculate_output", "pass_threshold"?}`; the
    formula's value must land in [0, 1] (it is the reward)."""

    kind, low, high, binary = "multi", 0.0, 1.0, False

    def __init__(self, spec: dict[str, Any], runtime: Runtime, depth: int = 0) -> None:
        where = f"multi grader {spec.get('name', '')!r}"
        if depth >= MAX_DEPTH:
            raise TaskError(f"{where}: multi graders nest deeper than {MAX_DEPTH}")
        self.name = str(spec.get("name") or "multi")
        subs = need(spec, "graders", dict, where)
        if not subs:
            raise TaskError(f"{where}: graders is empty")
        self.graders = {str(k): build_grader(v, runtime, depth + 1) for k, v in subs.items()}
        self.formula = Formula(need(spec, "calculate_output", str, where), set(self.graders))
        self.pass_threshold = threshold(spec, where)

    def grade(self, item: dict[str, Any], sample: dict[str, Any]) -> Graded:
        parts = {k: g.grade(item, sample) for k, g in self.graders.items()}
        score = self.formula({k: p.score for k, p in parts.items()})
        if not 0.0 <= score <= 1.0:
            raise TaskError(f"multi grader {self.name!r}: calculate_output gave {score:g}, outside [0, 1]")
        reason = f"multi {self.name!r}: {self.formula.text} = {score:.3f} (" + \
            ", ".join(f"{k}={p.score:g}" for k, p in parts.items()) + ")"
        return Graded(score, reason, {"scores": {k: p.score for k, p in parts.items()},
                                      "reasons": {k: p.reason for k, p in parts.items()}},
                      all(p.cacheable for p in parts.values()))


KINDS = {"string_check": StringCheckGrader, "text_similarity": TextSimilarityGrader, "python": PythonGrader,
         "score_model": ScoreModelGrader, "label_model": LabelModelGrader, "multi": MultiGrader}


def build_grader(spec: Any, runtime: Runtime | None = None, depth: int = 0) -> Any:
    """The grader a spec describes (TaskError naming the problem when it is malformed)."""
    if not isinstance(spec, dict):
        raise TaskError(f"a grader spec must be a JSON object, got {type(spec).__name__}")
    kind = spec.get("type")
    if kind not in KINDS:
        raise TaskError(f"grader type must be one of {sorted(KINDS)}, got {kind!r}")
    runtime = runtime or Runtime()
    if kind == "multi":
        return MultiGrader(spec, runtime, depth)
    return KINDS[kind](spec, runtime)
