"""The rollout-engine resource reaches evaluation and the production responder; training says what it needs."""

from __future__ import annotations

import dagster as dg
import pytest

from flywheel.evaluation.runner import evaluate_policy
from flywheel.evaluation.suites import EvalConfig
from flywheel_dagster.resources.rollout import RolloutEngineResource


def test_factory_builds_the_configured_engine_and_evaluation_uses_it(tiny_model_dir):
    resource = RolloutEngineResource(max_batch_size=3)
    built = []

    def factory(path: str):
        eng = resource.factory("cpu")(path)
        built.append(eng)
        return eng

    cfg = EvalConfig(n_samples=1, tasks_per_domain={"math": 2}, greedy=False, suites=("heldout",))
    rep = evaluate_policy(str(tiny_model_dir), cfg, engine=factory)
    assert len(built) == 1 and built[0].max_batch_size == 3
    assert len(rep.tasks) == 2


def test_training_refuses_an_engine_it_cannot_sample_the_policy_with():
    RolloutEngineResource().check_trainable()
    with pytest.raises(dg.Failure, match="torch engine"):
        RolloutEngineResource(engine="vllm").check_trainable()
