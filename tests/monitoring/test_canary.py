"""The canary's verdict: a candidate that loses on the shared live requests fails, an equal one passes."""

from __future__ import annotations

import random

import pytest

from flywheel.monitoring.canary import CanaryConfig, Pair, canary_verdict, side_by_side


def _pairs(p_champ: float, p_cand: float, n: int, seed: int = 0) -> list[Pair]:
    rng = random.Random(seed)
    return [Pair(f"t{i}", "math" if i % 2 else "code", rng.random() < p_champ, rng.random() < p_cand)
            for i in range(n)]


def test_a_worse_candidate_fails_and_an_equal_one_passes():
    worse = canary_verdict(_pairs(0.7, 0.5, 600))
    assert not worse.passed and worse.hi < 0 and "loses on live traffic" in worse.reason
    assert set(worse.per_domain) == {"math", "code"} and worse.per_domain["math"]["n"] == 300
    same = [Pair(p.task_id, p.domain, p.champion, p.champion) for p in _pairs(0.7, 0.7, 600)]
    v = canary_verdict(same)
    assert v.passed and v.diff == 0.0
    assert canary_verdict(_pairs(0.7, 0.7, 200, seed=1)).passed  # noisy, but not shown worse


def test_too_few_shadowed_requests_is_a_fail():
    v = canary_verdict(_pairs(0.7, 0.9, 20), CanaryConfig(min_pairs=100))
    assert not v.passed and "fewer than 100" in v.reason


def test_the_report_shows_eval_and_live_side_by_side():
    md = side_by_side({"math": 0.05, "code": 0.01, "overall": 0.03}, canary_verdict(_pairs(0.7, 0.5, 400)))
    lines = md.splitlines()
    assert lines[0] == "| domain | eval diff (held-out) | live diff (canary) | live pairs |"
    assert lines[2].startswith("| code | +0.010 | -") and lines[-1].startswith("| overall | +0.030 | -")


@pytest.mark.parametrize("bad", [{"share": 0.0}, {"share": 1.5}, {"margin": -0.1}, {"min_pairs": 0}])
def test_config_is_validated(bad):
    with pytest.raises(ValueError):
        CanaryConfig(**bad)
