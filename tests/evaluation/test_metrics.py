"""Evaluation statistics against hand-computed values."""

from __future__ import annotations

import numpy as np
import pytest

from flywheel.evaluation.metrics import bootstrap_ci, paired_difference, pass_at_k


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (1, 1, 1, 1.0),
        (1, 0, 1, 0.0),
        (4, 1, 1, 0.25),  # pass@1 = c / n
        (4, 1, 2, 0.5),  # 1 - C(3,2)/C(4,2) = 1 - 3/6
        (5, 2, 2, 0.7),  # 1 - C(3,2)/C(5,2) = 1 - 3/10
        (10, 3, 5, 1 - 21 / 252),  # C(7,5)=21, C(10,5)=252
        (3, 2, 2, 1.0),  # n - c < k: every draw of 2 contains a pass
    ],
)
def test_pass_at_k_hand_values(n, c, k, expected):
    assert pass_at_k(n, c, k) == pytest.approx(expected)


def test_pass_at_k_is_unbiased_against_enumeration():
    """The estimator equals the exact probability over all k-subsets of the n samples."""
    from itertools import combinations

    samples = [1, 0, 0, 1, 0, 0]
    for k in range(1, 7):
        subsets = list(combinations(samples, k))
        exact = sum(any(s) for s in subsets) / len(subsets)
        assert pass_at_k(6, 2, k) == pytest.approx(exact)


@pytest.mark.parametrize(("n", "c", "k"), [(0, 0, 1), (3, 4, 1), (3, 1, 4), (3, 1, 0)])
def test_pass_at_k_rejects_bad_input(n, c, k):
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)


def test_bootstrap_ci_covers_true_mean_and_is_seeded():
    rng = np.random.default_rng(1)
    covered = 0
    for _ in range(200):
        x = rng.binomial(1, 0.3, size=60)
        e = bootstrap_ci(x, n_boot=400, seed=7)
        assert e.lo <= e.value <= e.hi
        covered += e.lo <= 0.3 <= e.hi
    assert covered / 200 >= 0.88  # nominal 95%; percentile bootstrap on n=60 is a little narrow
    x = rng.binomial(1, 0.5, size=30)
    assert bootstrap_ci(x, seed=3) == bootstrap_ci(x, seed=3)


def test_bootstrap_ci_edges():
    assert bootstrap_ci([]).n == 0 and np.isnan(bootstrap_ci([]).value)
    e = bootstrap_ci([0.5])
    assert (e.value, e.lo, e.hi) == (0.5, 0.5, 0.5)
    e = bootstrap_ci([1.0] * 10)
    assert (e.lo, e.hi) == (1.0, 1.0)


def test_paired_difference_sees_what_unpaired_noise_hides():
    rng = np.random.default_rng(0)
    difficulty = rng.uniform(0, 1, size=80)  # large between-task variance
    base = difficulty
    cand = difficulty + 0.05  # a small, consistent improvement
    d = paired_difference(cand, base, seed=0)
    assert d.value == pytest.approx(0.05)
    assert d.lo > 0  # paired: clearly positive
    unpaired_lo = bootstrap_ci(cand, seed=0).lo - bootstrap_ci(base, seed=1).hi
    assert unpaired_lo < 0  # unpaired intervals overlap
    with pytest.raises(ValueError):
        paired_difference([1, 0], [1, 0, 1])
