"""Has the champion stopped keeping its promise in production? A sequential test that may be checked every day.

Each judged live request is a bet against "the champion passes at least `promise - margin`" in its domain:
wealth W = prod_i (1 + lam (m_i - x_i)), x_i in {0, 1} the request's outcome, m_i its domain's promised rate
less the margin. Under that hypothesis every factor has mean <= 1, so W is a nonnegative supermartingale and
(Ville's inequality) P(W ever reaches 1/alpha) <= alpha: checking it daily, or after every request, forever,
rolls back a champion that keeps its promise with probability at most alpha. An average over a fixed grid of
`lam` (a mixture, itself a supermartingale) spares choosing the bet size: small bets catch small drops
slowly, large ones big drops fast. With fixed bets the order of requests does not matter, so per-day,
per-domain counts are enough. Each domain is tested on its own (at alpha / domains), so a domain that
still keeps its promise does not hide one that broke it; and a test is started on each day the champion
served (the k-th at a share 6 / (pi k)^2 of that, shares that sum to it), so good days before a drop do
not hold back the test of the days after it. A union bound over both keeps the whole rule at alpha.

The promise is the champion's evaluation (pass@1 per domain when it was promoted), or with `baseline="live"`
its own first days in production (a Hoeffding lower bound at alpha/2, the test at the other alpha/2), for
traffic whose tasks the evaluation does not represent.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from flywheel.config_fields import check_choices, option

BETS = (0.02, 0.05, 0.1, 0.2, 0.35, 0.5, 0.7, 0.9)
"""The mixture's bet sizes; each < 1, so a factor 1 + lam (m - 1) stays positive for any promise m >= 0."""


@dataclass(frozen=True)
class LiveCounts:
    """One day and domain of a model's live traffic: requests judged and how many passed."""

    day: str
    domain: str
    n: int
    passes: int


@dataclass(frozen=True)
class RollbackConfig:
    """When the rollback sensor moves `champion` back."""

    alpha: float = option(0.05, "Chance of ever rolling back a champion that keeps its promise, over every "
                                "day it is checked (the test is valid under daily checking).", gt=0, le=0.5)
    margin: float = option(0.02, "A live pass rate this far below the promise is still kept (slack for the "
                                 "evaluation's own noise).", ge=0, le=0.5)
    min_records: int = option(200, "Judged live requests of the champion needed before any decision.", ge=0)
    baseline: str = option("eval", "What the champion promised: eval (its pass@1 per domain when promoted) | "
                                   "live (a lower bound of its own pass rate over its first baseline_days days).",
                           choices=("eval", "live"))
    baseline_days: int = option(1, "Days of live traffic that set the promise when baseline=live.", ge=1)

    def __post_init__(self) -> None:
        check_choices(self)  # choices, the ranges on the fields, no NaN


@dataclass(frozen=True)
class RollbackDecision:
    """The test's state after the days seen: roll back or not, and the numbers that decided it."""

    rollback: bool
    reason: str
    log_wealth: float
    log_threshold: float
    records: int
    days: tuple[str, ...]
    live_rate: float | None
    promised_rate: float | None
    per_domain: dict[str, dict[str, float]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "days": list(self.days)}


def log_wealth(counts: Mapping[str, tuple[int, int]], floors: Mapping[str, float]) -> float:
    """log of the mixture wealth after `counts` (domain -> (judged, passed)) against `floors` (domain -> m)."""
    logs = []
    for lam in BETS:
        total = 0.0
        for d, (n, k) in counts.items():
            m = floors[d]
            total += k * math.log1p(lam * (m - 1.0)) + (n - k) * math.log1p(lam * m)
        logs.append(total)
    top = max(logs)
    return top + math.log(sum(math.exp(x - top) for x in logs) / len(logs))


def _by_domain(live: Sequence[LiveCounts]) -> dict[str, tuple[int, int]]:
    out: dict[str, tuple[int, int]] = {}
    for c in live:
        n, k = out.get(c.domain, (0, 0))
        out[c.domain] = (n + c.n, k + c.passes)
    return out


def live_promise(calibration: Sequence[LiveCounts], delta: float) -> dict[str, float]:
    """Per domain, a lower confidence bound (Hoeffding, level `delta` split over the domains) of the pass rate
    over `calibration`: what the champion showed it can do live."""
    counts = _by_domain(calibration)
    each = delta / max(1, len(counts))
    return {d: max(0.0, k / n - math.sqrt(math.log(1 / each) / (2 * n))) for d, (n, k) in counts.items() if n}


def decide_rollback(live: Sequence[LiveCounts], eval_rates: Mapping[str, float],
                    config: RollbackConfig | None = None) -> RollbackDecision:
    """Whether the champion's live outcomes so far (`live`, its days since promotion) show, at the config's
    level, a pass rate below its promise less the margin."""
    cfg = config or RollbackConfig()
    alpha = cfg.alpha
    if cfg.baseline == "live":
        days = sorted({c.day for c in live})
        calib = set(days[:cfg.baseline_days])
        promise = live_promise([c for c in live if c.day in calib], cfg.alpha / 2)
        live, alpha = [c for c in live if c.day not in calib], cfg.alpha / 2
    else:
        promise = {d: float(v) for d, v in eval_rates.items() if d != "overall"}
    floors = {d: p - cfg.margin for d, p in promise.items() if p - cfg.margin > 0}
    live = [c for c in live if c.domain in floors and c.n]
    counts = _by_domain(live)
    n = sum(nk[0] for nk in counts.values())
    days = tuple(sorted({c.day for c in live}))
    per = {d: {"n": nk[0], "live": round(nk[1] / nk[0], 4), "promise": round(promise[d], 4)} for d, nk in counts.items()}
    live_rate = sum(k for _, k in counts.values()) / n if n else None
    promised = sum(promise[d] * nk[0] for d, nk in counts.items()) / n if n else None
    if n < cfg.min_records:
        return RollbackDecision(False, f"{n} judged live requests, fewer than {cfg.min_records}: no decision yet",
                                0.0, math.log(1 / alpha), n, days, live_rate, promised, per)
    lw, threshold, since, dom = max(_windows(live, days, floors, alpha), key=lambda t: t[0] - t[1])
    roll = lw >= threshold
    said = (f"live pass rate {live_rate:.3f} vs promised {promised:.3f} (margin {cfg.margin}) over {n} requests "
            f"in {len(days)} day(s); strongest evidence: {dom} since {since}, {math.exp(min(lw, 700)):.3g} vs "
            f"{math.exp(threshold):.0f} needed")
    return RollbackDecision(roll, ("significant drop: " if roll else "kept: ") + said, lw, threshold, n, days,
                            live_rate, promised, per)


def _windows(live: Sequence[LiveCounts], days: Sequence[str], floors: Mapping[str, float],
             alpha: float) -> list[tuple[float, float, str, str]]:
    """(log wealth, log threshold, start day, domain) of every per-domain test started on each day."""
    per_day: dict[tuple[str, str], tuple[int, int]] = {}
    for c in live:
        n, k = per_day.get((c.domain, c.day), (0, 0))
        per_day[(c.domain, c.day)] = (n + c.n, k + c.passes)
    doms = sorted({c.domain for c in live})
    out = []
    for d in doms:
        n = k = 0
        for i in range(len(days) - 1, -1, -1):  # suffix sums: the days from days[i] on
            dn, dk = per_day.get((d, days[i]), (0, 0))
            n, k = n + dn, k + dk
            if dn:
                out.append((log_wealth({d: (n, k)}, floors), start_threshold(alpha / len(doms), i + 1), days[i], d))
    return out


def start_threshold(alpha: float, k: int) -> float:
    """log of the wealth the test started on the k-th day (1-based) must reach: its share alpha 6 / (pi k)^2 of
    alpha (the shares sum to alpha), so a drop is judged on the days since it began, not against the good
    days before it, and the false-rollback bound still holds over all start days together."""
    return math.log(math.pi ** 2 * k * k / (6 * alpha))
