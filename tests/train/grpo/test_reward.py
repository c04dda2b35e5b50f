"""Partial credit is RL's reward only: bounded in [0, 1], below any pass, off by default; `passed` stays binary,
so evaluation (which reads `passed`) is unchanged."""

from __future__ import annotations

from flywheel.environments.agent import AgentEnvironment
from flywheel.environments.toolcalls import format_call
from flywheel.environments.verdict import Verdict, failed, passed
from flywheel.train.config import TrainConfig
from flywheel.train.grpo.reward import PARTIAL_WEIGHT, PartialCredit, credit, reward_fn


def test_partial_credit_is_off_by_default_and_bounded():
    assert TrainConfig().partial_credit is False
    score = object()
    assert reward_fn(score, False) is score
    assert credit(failed("x", item_share=0.5)).reward == PARTIAL_WEIGHT * 0.5
    assert credit(failed("x", item_share=7.0)).reward == PARTIAL_WEIGHT  # clamped
    assert credit(failed("x", item_share=-1)).reward == 0.0
    assert credit(failed("x")).reward == 0.0 and credit(failed("x", item_share=True)).reward == 0.0
    p = passed("ok", item_share=1.0)
    assert credit(p) is p


def test_partial_credit_scores_agent_rollouts_evaluation_stays_binary():
    env = AgentEnvironment()
    t = env.suite(1, 0, 2, lambda t: True)[0]
    calls = [c for c in t.reference["solution_calls"]]
    half = "".join(format_call(n, dict(a)) for n, a in calls[:1])  # one item of two, never finished
    gold = t.solution

    def score(domain, task, response) -> Verdict:
        return env.verify(task, response)

    rl = PartialCredit(score)
    task = t.verifier_task()
    v_half, v_gold, v_none = rl.many([("agent", task, half), ("agent", task, gold), ("agent", task, "")])
    assert not v_half.passed and 0.0 < v_half.reward < 1.0
    assert v_gold.passed and v_gold.reward == 1.0
    assert not v_none.passed and v_none.reward == 0.0
    assert score("agent", task, half).reward == 0.0  # the verifier's own verdict (what evaluation reads) is binary
    assert rl("agent", task, half).reward == v_half.reward
