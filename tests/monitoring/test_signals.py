"""Each signal fires on the data that shows the problem and stays quiet on healthy data."""

from __future__ import annotations

import pytest

from flywheel.monitoring.signals import (
    ERROR,
    WARN,
    entropy_collapse,
    eval_drift,
    finished_samples,
    pool_dry,
    reward_collapse,
    reward_hacking,
    sampling_success,
    spike,
    verifier_infra_rate,
)
from flywheel.monitoring.thresholds import AlertThresholds

TH = AlertThresholds()


def _history(**series: list[float]) -> list[dict[str, float]]:
    n = max(len(v) for v in series.values())
    return [{"step": float(i + 1), **{k.replace("__", "/"): v[i] for k, v in series.items() if i < len(v)}}
            for i in range(n)]


def test_entropy_collapse_fires_on_the_last_steps_only():
    fired = entropy_collapse(_history(entropy=[2.1, 1.0, 0.01, 0.0, 0.02]), TH)
    assert not fired.passed and fired.severity == ERROR and fired.series[-1] == 0.02
    assert entropy_collapse(_history(entropy=[0.01, 0.0, 1.5, 1.4, 1.6]), TH).passed
    assert entropy_collapse(_history(**{"rft/loss": [0.3]}), TH).passed  # RFT measures no entropy


def test_flat_rewards_fire_nan_free_or_not():
    assert not reward_collapse(_history(reward__mean=[0.0] * 4, reward__std=[0.0] * 4), TH).passed
    assert reward_collapse(_history(reward__mean=[0.2, 0.3], reward__std=[0.3, 0.35]), TH).passed
    rft = reward_collapse(_history(pass_rate=[1.0]), TH)  # RFT learns from passes alone: not judged
    assert rft.passed and rft.value is None


def test_sampling_success_warns_when_most_groups_carry_no_signal():
    s = sampling_success(_history(groups__dropped_share=[0.5, 0.9, 0.95, 0.9]), TH)
    assert not s.passed and s.severity == WARN and s.value == pytest.approx(1 - (0.9 + 0.95 + 0.9) / 3, abs=1e-4)
    assert sampling_success(_history(groups__dropped_share=[0.3, 0.4]), TH).passed


def test_finished_samples_warns_when_most_are_cut_off():
    s = finished_samples(_history(samples__finished_share=[0.9, 0.3, 0.2, 0.25]), TH)
    assert not s.passed and s.severity == WARN and s.value == pytest.approx(0.25, abs=1e-4)
    assert finished_samples(_history(samples__finished_share=[0.2, 0.9, 0.95, 0.8]), TH).passed
    assert finished_samples(_history(entropy=[1.0]), TH).passed  # nothing recorded: nothing to judge


def test_reward_hacking_needs_a_rising_reward_and_a_falling_heldout_score():
    rising = _history(reward__mean=[0.2, 0.25, 0.3, 0.5, 0.6, 0.7])
    assert not reward_hacking(rising, -0.04, TH).passed
    assert reward_hacking(rising, +0.03, TH).passed  # held-out rose too: learning
    assert reward_hacking(_history(reward__mean=[0.5, 0.5, 0.5, 0.5]), -0.04, TH).passed
    assert reward_hacking(rising, None, TH).passed


def test_verifier_infra_rate_counts_judge_errors_only():
    reasons = ["valid"] * 90 + ["rejects the reference solution: wrong"] * 5 + ["judge error on the reference"] * 5
    s = verifier_infra_rate(reasons, TH)
    assert not s.passed and s.value == 0.05 and s.details["infra_errors"] == 5
    assert verifier_infra_rate(["valid"] * 99 + ["judge error on the reference"], TH).passed


def test_spikes_are_relative_to_the_usual_day_and_above_a_floor():
    assert not spike("quarantine_spike", 0.09, [0.01, 0.012, 0.009], TH.min_quarantine_spike, TH).passed
    assert spike("quarantine_spike", 0.015, [0.001, 0.002], TH.min_quarantine_spike, TH).passed  # under the floor
    assert spike("quarantine_spike", 0.03, [], TH.min_quarantine_spike, TH).passed is False  # first day: the floor


def test_eval_drift_and_a_dry_pool():
    assert not eval_drift({"math": 0.6, "code": 0.7}, {"math": 0.7, "code": 0.7}, TH).passed
    assert eval_drift({"math": 0.68}, {"math": 0.7}, TH).passed
    assert pool_dry(0, [100, 120], TH).severity == ERROR and not pool_dry(0, [100], TH).passed
    assert not pool_dry(20, [100, 120, 110], TH).passed and pool_dry(90, [100, 120], TH).passed
