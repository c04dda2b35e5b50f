"""The rollback test: rolls back a champion whose live pass rate dropped, keeps one that keeps its promise,
and stays valid when looked at every day."""

from __future__ import annotations

import random

import pytest

from flywheel.monitoring.sequential import LiveCounts, RollbackConfig, decide_rollback, log_wealth

PROMISE = {"math": 0.7, "code": 0.6, "overall": 0.66}


def _days(rates: dict[str, float], days: int, per_day: int, seed: int, start: int = 1) -> list[LiveCounts]:
    rng = random.Random(seed)
    out = []
    for d in range(start, start + days):
        for dom, p in rates.items():
            n = per_day // len(rates)
            out.append(LiveCounts(f"2026-12-{d:02d}", dom, n, sum(rng.random() < p for _ in range(n))))
    return out


def test_a_ten_point_drop_is_rolled_back_and_an_unchanged_champion_is_kept():
    dropped = _days({"math": 0.6, "code": 0.5}, 2, 400, seed=1)
    d = decide_rollback(dropped, PROMISE)
    assert d.rollback and d.reason.startswith("significant drop")
    assert d.log_wealth >= d.log_threshold and d.records == 800 and d.days == ("2026-12-01", "2026-12-02")
    assert d.per_domain["math"]["promise"] == 0.7 and d.promised_rate == pytest.approx(0.65)
    kept = decide_rollback(_days({"math": 0.7, "code": 0.6}, 10, 400, seed=2), PROMISE)
    assert not kept.rollback and kept.reason.startswith("kept")


def test_no_decision_before_enough_requests():
    d = decide_rollback(_days({"math": 0.0}, 1, 50, seed=0), PROMISE, RollbackConfig(min_records=200))
    assert not d.rollback and "fewer than 200" in d.reason


def test_false_rollbacks_stay_under_alpha_when_checked_daily():
    """An unchanged champion, checked after each of 20 days: rolled back in at most alpha of the histories."""
    cfg = RollbackConfig(alpha=0.05, margin=0.0, min_records=0)
    rolled = 0
    for seed in range(200):
        history: list[LiveCounts] = []
        for day in range(1, 21):
            history += _days({"math": 0.7}, 1, 100, seed=seed * 100 + day, start=day)
            if decide_rollback(history, {"math": 0.7}, cfg).rollback:
                rolled += 1
                break
    assert rolled / 200 <= 0.05


def test_wealth_falls_under_the_promise_and_grows_below_it():
    assert log_wealth({"math": (1000, 700)}, {"math": 0.68}) < 0
    assert log_wealth({"math": (1000, 600)}, {"math": 0.68}) > 5


def test_live_baseline_promises_what_the_first_days_showed():
    cfg = RollbackConfig(baseline="live", baseline_days=2)
    first = _days({"math": 0.4}, 2, 1000, seed=3)  # worse than the eval promise, but that is how it started
    kept = decide_rollback(first + _days({"math": 0.4}, 5, 1000, seed=4, start=3), PROMISE, cfg)
    assert not kept.rollback and kept.days[0] == "2026-12-03"
    assert kept.per_domain["math"]["promise"] < 0.4
    assert decide_rollback(first + _days({"math": 0.25}, 3, 1000, seed=5, start=3), PROMISE, cfg).rollback
    assert decide_rollback(first + _days({"math": 0.4}, 5, 1000, seed=4, start=3), PROMISE).rollback  # eval baseline


@pytest.mark.parametrize("bad", [{"alpha": 0.0}, {"margin": -0.1}, {"baseline": "vibes"}, {"baseline_days": 0}])
def test_config_is_validated(bad):
    with pytest.raises(ValueError):
        RollbackConfig(**bad)
