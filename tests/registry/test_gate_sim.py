"""The gate's simulator draws what it claims: matched spreads, mean-exact gains, uneven changes, paired samples."""

from __future__ import annotations

import numpy as np
import pytest

from flywheel.registry.gate_sim import (
    World,
    beta_matched,
    candidate_rates,
    run_scenario,
    simulate_turn,
    wilson,
)


def test_beta_spread_matches_pass1_and_pass8():
    for p1, p8 in ((0.581, 0.84), (0.008, 0.05), (0.764, 0.975)):
        a, b = beta_matched(p1, p8)
        p = np.random.default_rng(0).beta(a, b, size=200_000)
        assert p.mean() == pytest.approx(p1, abs=0.003)
        assert (1 - (1 - p) ** 8).mean() == pytest.approx(p8, abs=0.005)
    with pytest.raises(ValueError):
        beta_matched(0.0, 0.5)


def test_candidate_moves_each_domain_by_its_gain_with_uneven_task_changes():
    rng = np.random.default_rng(1)
    base = rng.beta(*beta_matched(0.6, 0.9), size=400)
    same = candidate_rates(base, 0.0, 0.0, rng)
    assert np.allclose(same, np.clip(base, 1e-4, 1 - 1e-4), atol=1e-6)
    for gain in (0.0, 0.05, -0.05):
        cand = candidate_rates(base, gain, 1.5, rng)
        assert cand.mean() - base.mean() == pytest.approx(gain, abs=1e-4)
        assert np.std(cand - base) > 0.05  # tasks move unevenly, some of them down even under a gain


def test_a_turn_pairs_the_same_tasks_and_coupled_samples_agree():
    world = World({"math": 50, "code": 10})
    c = simulate_turn(world, {}, 0.0, np.random.default_rng(2), coupling=1.0)
    assert c.diffs["math"].n == 50 and c.diffs["code"].n == 10
    assert all(e.value == 0 and e.lo == e.hi == 0 for e in c.diffs.values())  # same rates, same draws
    c = simulate_turn(world, {}, 0.0, np.random.default_rng(2), coupling=0.0)
    assert c.diffs["math"].lo < 0 < c.diffs["math"].hi  # independent draws: sampling noise only


def test_tallies_count_a_failing_unit_as_false_only_where_nothing_changed():
    world = World({"math": 20, "code": 10})
    got = run_scenario(world, {"math": 0.05}, 1.0, {"r": lambda c: (True, ("math", "code"))}, sims=3, seed=0)["r"]
    assert (got.turns, got.promoted, got.ni_false_fail) == (3, 3, 3)
    got = run_scenario(world, {"math": 0.05}, 1.0, {"r": lambda c: (False, ("math",))}, sims=3, seed=0)["r"]
    assert (got.promoted, got.ni_false_fail) == (0, 0)
    assert wilson(0.0, 100)[0] == 0.0 and wilson(0.5, 100) == pytest.approx((0.404, 0.596), abs=0.002)
