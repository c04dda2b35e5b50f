"""`calculate_output` is evaluated by an AST walk: arithmetic and min/max over grader names, nothing else."""

from __future__ import annotations

import pytest

from flywheel.environments.verdict import TaskError
from flywheel.verifiers.graders.formula import Formula


def test_arithmetic_min_max() -> None:
    f = Formula("0.6 * a + 0.4 * max(b, c) - min(a, 0) / 2", {"a", "b", "c"})
    assert f({"a": 1.0, "b": 0.5, "c": 0.25}) == pytest.approx(0.8)
    assert Formula("-(a) + 1", {"a"})({"a": 0.25}) == 0.75


@pytest.mark.parametrize("text, why", [
    ("__import__('os').system('true')", "may use numbers"),
    ("a.__class__", "may use numbers"),
    ("a ** 2", "may use numbers"),
    ("[a][0]", "may use numbers"),
    ("abs(a)", "may use numbers"),
    ("b + 1", "names 'b', which is not one of its graders"),
    ("a +", "is not a formula"),
    ("'1'", "may use numbers"),
])
def test_anything_else_is_refused_when_built(text: str, why: str) -> None:
    with pytest.raises(TaskError, match=why):
        Formula(text, {"a"})


def test_division_by_zero_is_the_specs_error() -> None:
    with pytest.raises(TaskError, match="divided by zero"):
        Formula("a / b", {"a", "b"})({"a": 1.0, "b": 0.0})
