"""The native graders' metrics: exact values on small texts, and the metrics the spec names but flywheel refuses."""

from __future__ import annotations

import pytest

from flywheel.environments.verdict import TaskError
from flywheel.verifiers.graders.text import METRICS, bleu, gleu, metric, rouge_l, rouge_n, string_check


def test_string_check_operations() -> None:
    assert [string_check(op, "The Answer is 42", "42") for op in ("eq", "ne", "like", "ilike")] == [0, 1, 1, 1]
    assert string_check("like", "The Answer", "answer") == 0 and string_check("ilike", "The Answer", "answer") == 1
    assert string_check("eq", "42", "42") == 1


def test_similarity_values() -> None:
    assert bleu("the cat sat on the mat", "the cat sat on the mat") == pytest.approx(1.0)
    assert bleu("dog", "the cat sat on the mat") == 0.0
    assert 0 < bleu("the cat sat on a mat", "the cat sat on the mat") < 1
    assert rouge_n(1)("the cat", "the cat sat") == pytest.approx(0.8)  # p=1, r=2/3
    assert rouge_n(2)("the cat", "the cat sat") == pytest.approx(2 / 3)  # p=1, r=1/2
    assert rouge_l("a b c d", "a x c d") == pytest.approx(0.75)  # LCS a c d
    assert gleu("a b", "a b c") == pytest.approx(3 / 6)  # min(3/3 hyp grams, 3/6 ref grams)
    assert METRICS["fuzzy_match"]("kitten", "sitting") == pytest.approx(0.615, abs=0.01)
    assert set(METRICS) == {"fuzzy_match", "bleu", "gleu", "rouge_1", "rouge_2", "rouge_3", "rouge_4", "rouge_5",
                            "rouge_l"}


def test_unsupported_and_unknown_metrics_are_refused() -> None:
    with pytest.raises(TaskError, match="'meteor' is not supported"):
        metric("meteor")
    with pytest.raises(TaskError, match="unknown evaluation_metric 'bleurt'"):
        metric("bleurt")
    assert metric("rouge_l")("x " * 30_000, "x") < 0.01  # long texts are cut, not quadratic forever
