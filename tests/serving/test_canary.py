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
