"""Deploy-side monitoring: the promise a version makes, the served-weights comparison, a rollback with its reason."""

from __future__ import annotations

import json

import numpy as np
from safetensors.numpy import load_file, save_file

from flywheel.registry.deploy import ROLLED_BACK_TAG, promise_of, rollback_champion, served_weights_match
from flywheel.registry.mlflow_registry import EVENTS_TAG, WEIGHTS_TAG


def test_the_promise_is_the_evaluations_lower_bound(better_report):
    promise = promise_of(better_report)
    assert set(promise) == {"math", "code"}
    for d, lo in promise.items():
        assert lo == round(better_report.metrics[d]["pass@1"].lo, 4) < better_report.pass_rates()[d]


def test_served_weights_must_match_the_registered_fingerprint(mlflow_registry, random_tiny, flywheel_home):
    base = random_tiny(flywheel_home.models / "base" / "tiny-test")
    champ = mlflow_registry.ensure_champion(base, "tiny-test")
    registered = champ.tags[WEIGHTS_TAG]
    uri = flywheel_home.mlflow_uri
    ok, details = served_weights_match(uri, {"flywheel serve flywheel-policy:1": registered})
    assert ok and details["registered"] == registered and details["served: champion folder"] == registered
    ok, details = served_weights_match(uri, {"flywheel serve flywheel-policy:1": "0" * 64})
    assert not ok and "flywheel serve" in details["reason"]
    [weights] = list((flywheel_home.models / "base" / "tiny-test").glob("*.safetensors"))
    tensors = load_file(str(weights))  # the registered folder overwritten in place: a silent desync
    name = sorted(tensors)[0]
    tensors[name] = (tensors[name] + np.ones_like(tensors[name])).astype(tensors[name].dtype)
    save_file(tensors, str(weights))
    ok, details = served_weights_match(uri, {})
    assert not ok and details["reason"] == "differs from the registry: champion folder"


def test_a_rollback_records_why_in_the_history_and_on_the_version(mlflow_registry, random_tiny, flywheel_home):
    base = random_tiny(flywheel_home.models / "base" / "tiny-test")
    mlflow_registry.ensure_champion(base, "tiny-test")
    v2 = mlflow_registry.register(base, {"base_model": "tiny-test"})
    mlflow_registry.set_champion(v2.version)
    r = rollback_champion(flywheel_home.mlflow_uri, "live pass rate dropped")
    assert (r.from_version, r.to_version) == ("2", "1") and mlflow_registry.champion().version == "1"
    events = json.loads(mlflow_registry.client.get_registered_model("flywheel-policy").tags[EVENTS_TAG])
    assert events[-1]["reason"] == "rollback from 2 to 1: live pass rate dropped"
    assert mlflow_registry.get("2").tags[ROLLED_BACK_TAG] == "live pass rate dropped"


def test_a_candidate_that_wins_offline_but_loses_in_the_canary_is_not_promoted(mlflow_registry, random_tiny,
                                                                                flywheel_home, tmp_path):
    from flywheel.evaluation.report import write_report
    from flywheel.evaluation.runner import EvalReport, TaskResult, aggregate, compare
    from flywheel.evaluation.suites import EvalConfig
    from flywheel.monitoring.canary import Pair, canary_verdict
    from flywheel.registry.deploy import deploy_candidate

    base = random_tiny(flywheel_home.models / "base" / "tiny-test")
    mlflow_registry.ensure_champion(base, "tiny-test")
    cfg = EvalConfig(n_samples=2, n_boot=200)

    def report(model, math):  # 60 math tasks: the candidate solves every one, the champion half its samples
        tasks = [TaskResult(f"math-{i}", "math", math, 1.0, 10, 5, 1.0, 0.0) for i in range(60)]
        return EvalReport(model, cfg, tasks, aggregate(tasks, cfg))

    cand, champ = report("cand", (True, True)), report("flywheel-policy:1", (True, False))
    out = tmp_path / "eval"
    write_report(out, cand, champ, compare(cand, champ))
    (out / "meta.json").write_text(json.dumps({"champion_uri": "flywheel-policy:1"}))
    loses = canary_verdict([Pair(f"t{i}", "math", True, i % 3 == 0) for i in range(300)])  # live: 1/3 vs all
    res = deploy_candidate(base, "tiny-test", out, flywheel_home, canary=loses)
    assert not res.decision.promoted and res.champion.version == "1"
    assert "loses on live traffic" in res.decision.reason
    assert json.loads(mlflow_registry.get(res.candidate.version).tags["flywheel.canary"])["passed"] is False
    res = deploy_candidate(base, "tiny-test", out, flywheel_home)  # the same evaluation without the canary
    assert res.decision.promoted and res.champion.uri == res.candidate.uri
