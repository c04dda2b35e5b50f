"""Two-phase promotion in the registry: the gate makes a `challenger`, its canary makes it champion (or not)."""

from __future__ import annotations

import json

from flywheel.monitoring.canary import Pair, canary_verdict
from flywheel.registry.canary import CANARY_TAG, settle_challenger, stage_challenger
from flywheel.registry.history import load_history


def _comparison(better: bool):
    from flywheel.evaluation.runner import EvalReport, TaskResult, aggregate, compare
    from flywheel.evaluation.suites import EvalConfig

    cfg = EvalConfig(n_samples=2, n_boot=200)

    def report(model, samples):
        tasks = [TaskResult(f"math-{i}", "math", samples, 1.0, 10, 5, 1.0, 0.0) for i in range(60)]
        return EvalReport(model, cfg, tasks, aggregate(tasks, cfg))

    cand = report("cand", (True, True) if better else (True, False))
    return compare(cand, report("flywheel-policy:1", (True, False)))


def _candidate(reg, base):
    return reg.register(base, {"base_model": "tiny-test", "compared_to": "flywheel-policy:1",
                               "eval_pass_rates": {"math": 1.0, "overall": 1.0},
                               "champion_pass_rates": {"math": 0.5, "overall": 0.5}})


def test_the_gate_makes_a_challenger_and_a_losing_canary_keeps_the_champion(mlflow_registry, random_tiny,
                                                                            flywheel_home):
    base = random_tiny(flywheel_home.models / "base" / "tiny-test")
    mlflow_registry.ensure_champion(base, "tiny-test")
    refused = stage_challenger(mlflow_registry, _candidate(mlflow_registry, base), _comparison(better=False))
    assert not refused.promoted and mlflow_registry.challenger() is None  # the gate refused: no challenger
    cand = _candidate(mlflow_registry, base)
    staged = stage_challenger(mlflow_registry, cand, _comparison(better=True))
    assert not staged.promoted and staged.reason.startswith(f"challenger {cand.uri}: passed the offline gate")
    assert mlflow_registry.challenger().version == cand.version and mlflow_registry.champion().version == "1"

    loses = canary_verdict([Pair(f"t{i}", "math", True, i % 3 == 0) for i in range(300)])
    out = settle_challenger(flywheel_home.mlflow_uri, loses)
    assert not out.promoted and "loses on live traffic" in out.reason and out.champion == "flywheel-policy:1"
    assert mlflow_registry.challenger() is None and mlflow_registry.champion().version == "1"
    tags = mlflow_registry.get(cand.version).tags
    assert tags["flywheel.promoted"] == "false" and json.loads(tags[CANARY_TAG])["passed"] is False
    math = next(r for r in out.table if r["domain"] == "math")  # eval beside live
    assert (math["eval_diff"], math["live_pairs"]) == (0.5, 300) and math["live_diff"] < -0.5
    assert load_history(flywheel_home.mlflow_uri)[-1].canary.startswith("failed")
    assert settle_challenger(flywheel_home.mlflow_uri, loses) is None  # nothing left to settle


def test_a_canary_that_holds_promotes_and_no_live_traffic_says_so(mlflow_registry, random_tiny, flywheel_home):
    base = random_tiny(flywheel_home.models / "base" / "tiny-test")
    mlflow_registry.ensure_champion(base, "tiny-test")
    cand = _candidate(mlflow_registry, base)
    stage_challenger(mlflow_registry, cand, _comparison(better=True))
    holds = canary_verdict([Pair(f"t{i}", "math", i % 2 == 0, i % 2 == 0) for i in range(200)])
    out = settle_challenger(flywheel_home.mlflow_uri, holds)
    assert out.promoted and out.champion == cand.uri == mlflow_registry.champion().uri
    assert mlflow_registry.get(cand.version).tags["flywheel.promoted"] == "true"
    nxt = _candidate(mlflow_registry, base)
    mlflow_registry.client.set_model_version_tag(mlflow_registry.name, nxt.version, "flywheel.compared_to", cand.uri)
    stage_challenger(mlflow_registry, nxt, _comparison(better=True))
    out = settle_challenger(flywheel_home.mlflow_uri, None, "the day's logs are yours")
    assert out.promoted and "offline gate alone" in out.reason and "the day's logs are yours" in out.reason


def test_a_champion_that_moved_since_the_evaluation_makes_the_challenger_stale(mlflow_registry, random_tiny,
                                                                              flywheel_home):
    base = random_tiny(flywheel_home.models / "base" / "tiny-test")
    mlflow_registry.ensure_champion(base, "tiny-test")
    cand = _candidate(mlflow_registry, base)
    stage_challenger(mlflow_registry, cand, _comparison(better=True))
    other = mlflow_registry.register(base, {"base_model": "tiny-other"})
    mlflow_registry.set_champion(other.version)
    holds = canary_verdict([Pair(f"t{i}", "math", True, True) for i in range(200)])
    out = settle_challenger(flywheel_home.mlflow_uri, holds)
    assert not out.promoted and "the champion changed" in out.reason and out.champion == other.uri
