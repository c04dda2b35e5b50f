"""The promotion gate as a statistical test: it promotes a clear gain and refuses a lucky point estimate."""

from __future__ import annotations

import numpy as np
import pytest

from flywheel.evaluation.runner import EvalReport, TaskResult, aggregate, compare
from flywheel.evaluation.suites import EvalConfig
from flywheel.registry.gate import GateConfig, decide, not_non_inferior

CFG = EvalConfig(n_samples=8, n_boot=500)


def sampled(model: str, rates: dict[str, list[float]], seed: int) -> EvalReport:
    """A report whose task `i` of domain `d` passed each of 8 samples with probability `rates[d][i]`."""
    rng = np.random.default_rng(seed)
    tasks = [TaskResult(f"{d}-{i}", d, tuple(bool(x) for x in rng.random(8) < p), 1.0, 10, 5, 1.0, 0.0)
             for d, ps in rates.items() for i, p in enumerate(ps)]
    return EvalReport(model, CFG, tasks, aggregate(tasks, CFG))


RATES = {"math": list(np.linspace(0.05, 0.95, 120)), "code": list(np.linspace(0.1, 0.9, 40))}


def shifted(by: float) -> dict[str, list[float]]:
    return {d: [min(1.0, max(0.0, p + by)) for p in ps] for d, ps in RATES.items()}


def test_clear_gain_is_promoted():
    ok, why = decide(compare(sampled("cand", shifted(0.15), 1), sampled("champ", RATES, 2)), GateConfig())
    assert ok, why
    assert "promoted cand" in why and "paired tasks" in why


def test_same_model_resampled_is_not_promoted_even_with_a_positive_point_estimate():
    refused_with_gain = 0
    for seed in range(12):
        c = compare(sampled("cand", RATES, 100 + seed), sampled("champ", RATES, 200 + seed))
        ok, why = decide(c, GateConfig())
        assert not ok, why
        if c.diffs["overall"].value > 0:
            refused_with_gain += 1
            assert "noise" in why or "non-inferiority" in why
    assert refused_with_gain > 0  # the old point-estimate gate would have promoted these


def test_a_domain_that_may_have_dropped_blocks_promotion():
    worse_code = {"math": shifted(0.2)["math"], "code": shifted(-0.25)["code"]}
    c = compare(sampled("cand", worse_code, 3), sampled("champ", RATES, 4))
    assert c.diffs["overall"].lo > 0  # the pooled gain alone would promote
    ok, why = decide(c, GateConfig())
    assert not ok and "code regressed" in why
    assert not_non_inferior(c, GateConfig()) == ("code",)
    assert decide(c, GateConfig(primary="math", non_inferiority=1.0))[0]


def test_primary_metric_is_pre_declared_and_checked():
    c = compare(sampled("cand", RATES, 5), sampled("champ", RATES, 6))
    with pytest.raises(ValueError, match="not in the evaluation"):
        decide(c, GateConfig(primary="agent"))
    with pytest.raises(ValueError, match="non_inferiority"):
        GateConfig(non_inferiority=-0.1)


def test_gate_is_a_pure_decision(base_report, better_report, regressed_report):
    ok, why = decide(compare(better_report, base_report), GateConfig(margin=0.02))
    assert ok and "promoted" in why
    ok, why = decide(compare(better_report, base_report), GateConfig(margin=0.5))
    assert not ok and "margin 0.500" in why
    ok, why = decide(compare(regressed_report, base_report), GateConfig(non_inferiority=0.05))
    assert decide(compare(regressed_report, base_report), GateConfig(non_inferiority=0.6))[0]  # the margin is the gate's
    assert not ok and "code regressed by 0.333" in why
    ok, why = decide(compare(base_report, base_report), GateConfig())
    assert not ok and "+0.000" in why
    assert decide(None, GateConfig())[0]


RG = ["rg.gcd", "rg.lcm", "rg.products", "rg.chain_sum", "rg.count_bits", "rg.basic_arithmetic", "rg.syllogism",
      "rg.aiw", "rg.bf", "rg.leg_counting", "rg.letter_counting", "rg.base_conversion", "rg.count_primes",
      "rg.simple_equations", "rg.number_sequence", "rg.family_relationships"]


def test_many_small_domains_are_judged_as_their_family_and_a_real_family_drop_still_blocks():
    """16 reasoning-gym domains of 20 tasks each, unchanged: each domain's interval is ~+-0.1 wide, so
    judged one by one some domain fails non-inferiority by chance; pooled as their family they pass.
    A drop of the whole family is still caught."""
    rates = {"math": list(np.linspace(0.05, 0.95, 120)),
             **{d: list(np.linspace(0.2, 0.8, 20)) for d in RG}}
    gain = {**rates, "math": [min(1.0, p + 0.2) for p in rates["math"]]}
    by_domain_failed = 0
    for seed in range(6):
        c = compare(sampled("cand", gain, 300 + seed), sampled("champ", rates, 400 + seed))
        assert set(c.families) == {"reasoning-gym"} and set(c.families["reasoning-gym"]) == set(RG)
        assert c.family_diffs["reasoning-gym"].n == 16 * 20
        ok, why = decide(c, GateConfig())
        assert ok and "family:reasoning-gym pooled" in why, why
        by_domain_failed += not decide(c, GateConfig(non_inferiority_by="domain"))[0]
    assert by_domain_failed > 0  # judged one by one, chance alone blocks some of these turns
    dropped = {**gain, **{d: [max(0.0, p - 0.2) for p in rates[d]] for d in RG}}
    c = compare(sampled("cand", dropped, 7), sampled("champ", rates, 8))
    ok, why = decide(c, GateConfig())
    assert not ok and "family:reasoning-gym regressed" in why, why
    with pytest.raises(ValueError):
        GateConfig(non_inferiority_by="everything")
