"""Evaluation statistics: unbiased pass@k, seeded bootstrap intervals, paired differences.

Everything is a pure function of numbers, so the report, the promotion gate and the
tests all agree on one definition. Intervals are percentile bootstraps over *tasks*
(the unit that was sampled), seeded so the same results give the same interval.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from math import comb

import numpy as np


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k (Chen et al. 2021): P(at least one of k draws without replacement from n passes).

    `n` samples of which `c` passed. Equals 1 - C(n-c, k) / C(n, k); exact for integers.
    """
    if n < 1 or not 0 <= c <= n:
        raise ValueError(f"need n >= 1 and 0 <= c <= n, got n={n}, c={c}")
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n, got k={k}, n={n}")
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its (1 - alpha) bootstrap interval over `n` tasks."""

    value: float
    lo: float
    hi: float
    n: int

    def to_dict(self) -> dict[str, float]:
        return asdict(self)

    def fmt(self, digits: int = 3) -> str:
        return f"{self.value:.{digits}f} [{self.lo:.{digits}f}, {self.hi:.{digits}f}]"


def bootstrap_ci(
    values: Sequence[float] | np.ndarray,
    stat: Callable[[np.ndarray], float] | None = None,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> Estimate:
    """`stat` (default: mean) of `values` with a percentile bootstrap interval, resampling values.

    An empty sample gives NaN bounds (nothing was measured); a single value gives a zero-width interval.
    """
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        nan = float("nan")
        return Estimate(nan, nan, nan, 0)
    point = float(stat(x)) if stat else float(np.mean(x))
    if x.size == 1:
        return Estimate(point, point, point, 1)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, x.size, size=(n_boot, x.size))
    boots = x[idx].mean(axis=1) if stat is None else np.array([stat(x[i]) for i in idx])
    lo, hi = np.quantile(boots, [alpha / 2, 1 - alpha / 2])
    return Estimate(point, float(min(lo, point)), float(max(hi, point)), int(x.size))


def paired_difference(
    candidate: Sequence[float] | np.ndarray,
    baseline: Sequence[float] | np.ndarray,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> Estimate:
    """Mean of `candidate - baseline` over the same tasks, with a paired bootstrap interval.

    Pairing (resampling tasks, keeping both scores of a task together) removes the
    between-task variance that an unpaired comparison would count as noise.
    """
    a, b = np.asarray(candidate, dtype=float), np.asarray(baseline, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"paired scores must align task by task: {a.shape} vs {b.shape}")
    return bootstrap_ci(a - b, n_boot=n_boot, alpha=alpha, seed=seed)
