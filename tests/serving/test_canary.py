"""The candidate shadows a share of a real production day: only the champion's answers are served and logged,
the paired outcomes show a candidate that is worse on live traffic."""

from __future__ import annotations

from flywheel.monitoring.canary import CanaryConfig, canary_verdict
from flywheel.serving.canary import ShadowResponder, read_pairs
from flywheel.world.simulated_model import SimulatedResponder
from flywheel.world.traffic import generate_day

CHAMPION = SimulatedResponder(model="flywheel-policy:2", skill=0.0)


def test_the_candidate_shadows_without_touching_what_is_served(tmp_path):
    bad = ShadowResponder(CHAMPION, SimulatedResponder(model="flywheel-policy:3", skill=-3.0),
                          CanaryConfig(share=0.25))
    shadowed = generate_day("2026-12-02", 800, 0, bad)
    plain = generate_day("2026-12-02", 800, 0, CHAMPION)
    assert shadowed.lines == plain.lines  # the day's logs are the champion's, byte for byte
    assert b"flywheel-policy:3" not in b"".join(shadowed.lines)
    assert 150 <= len(bad.pairs) <= 250  # ~25 % of the requests
    verdict = canary_verdict(read_pairs(bad.write_pairs(tmp_path / "pairs.jsonl")))
    assert not verdict.passed and verdict.diff < -0.1
    same = ShadowResponder(CHAMPION, CHAMPION, CanaryConfig(share=0.25))
    generate_day("2026-12-02", 800, 0, same)
    assert canary_verdict(same.pairs).passed


def _staged(mlflow_registry, random_tiny, flywheel_home):
    """A champion (v1) and a challenger (v2) that passed the offline gate against it."""
    from flywheel.registry.canary import stage_challenger

    base = random_tiny(flywheel_home.models / "base" / "tiny-test")
    mlflow_registry.ensure_champion(base, "tiny-test")
    cand = mlflow_registry.register(base, {"base_model": "tiny-test", "compared_to": "flywheel-policy:1",
                                           "eval_pass_rates": {"math": 0.8, "overall": 0.8},
                                           "champion_pass_rates": {"math": 0.6, "overall": 0.6}})
    stage_challenger(mlflow_registry, cand, None)  # no comparison: the gate lets it through
    assert mlflow_registry.challenger().uri == cand.uri
    return cand


def test_the_turns_canary_keeps_a_bad_challenger_and_promotes_an_equal_one(mlflow_registry, random_tiny,
                                                                          flywheel_home):
    """The registry's challenger shadows its champion on the day's further requests (the simulated production
    model stands for both: skill -3 is a deliberately bad candidate); the verdict settles the promotion."""
    from flywheel.serving.canary import canary_turn, canary_window

    skills = {"flywheel-policy:1": 0.0, "flywheel-policy:2": -3.0, "flywheel-policy:3": 0.0}

    def responders(ref):
        return SimulatedResponder(model=ref.uri, skill=skills[ref.uri])

    _staged(mlflow_registry, random_tiny, flywheel_home)
    cfg = CanaryConfig(share=0.1, min_pairs=100)
    assert canary_window(3000, cfg) == 300 and canary_window(200, cfg) == 100
    out, run = canary_turn("2026-12-02", flywheel_home, 3000, cfg, responders=responders)
    assert run.requests == len(run.pairs) == 300 and run.challenger == "flywheel-policy:2"
    assert not out.promoted and "loses on live traffic" in out.reason and out.verdict.diff < -0.1
    assert mlflow_registry.champion().version == "1" and mlflow_registry.challenger() is None
    assert len(read_pairs(run.path)) == 300 and not (flywheel_home.raw_logs / "2026-12-02").exists()
    overall = out.table[-1]
    assert overall["domain"] == "overall" and overall["eval_diff"] == 0.2 and overall["live_diff"] < -0.1

    equal = mlflow_registry.register(random_tiny(flywheel_home.models / "policies" / "v3"),
                                     {"base_model": "tiny-test", "compared_to": "flywheel-policy:1"})
    from flywheel.registry.canary import stage_challenger

    stage_challenger(mlflow_registry, equal, None)
    out, run = canary_turn("2026-12-03", flywheel_home, 3000, cfg, responders=responders)
    assert out.promoted and out.champion == "flywheel-policy:3" == mlflow_registry.champion().uri
    assert canary_turn("2026-12-03", flywheel_home, 3000, cfg, responders=responders) == (None, None)


def test_a_day_of_your_logs_has_no_live_traffic_to_shadow(mlflow_registry, random_tiny, flywheel_home):
    from flywheel.serving.canary import canary_turn

    cand = _staged(mlflow_registry, random_tiny, flywheel_home)
    out, run = canary_turn("2026-12-02", flywheel_home, 0)
    assert run is None and out.promoted and out.verdict is None and "no live traffic" in out.reason
    assert mlflow_registry.champion().uri == cand.uri
