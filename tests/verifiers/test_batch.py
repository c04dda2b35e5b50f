"""Batch scoring entry points: the TRL-style reward function, and non-dict tasks as failed verdicts."""

from __future__ import annotations

import json

import pytest

from flywheel.tasks.suites import train_suite
from flywheel.verifiers.batch import make_reward_func, score_batch


def test_reward_func_trl_style():
    f = make_reward_func("agent")
    ts = train_suite("agent", 3)
    cols = {"initial_state": [t.reference["initial_state"] for t in ts], "goal": [t.reference["goal"] for t in ts],
            "tools": [json.dumps(t.reference["tools"]) for t in ts]}
    comps = [ts[0].solution, "nothing", [{"role": "assistant", "content": ts[2].solution}]]
    assert f(prompts=[t.prompt for t in ts], completions=comps, **cols) == [1.0, 0.0, 1.0]
    mixed = make_reward_func()
    rows = {"domain": ["agent", "agent"], "task": [ts[0].verifier_task(), json.dumps({"prompt": "x"})]}
    assert mixed(prompts=["a", "b"], completions=[ts[0].solution, "x"], **rows) == [1.0, None]
    assert f.__name__ == "flywheel_agent_reward"


@pytest.mark.parametrize("bad", [None, "x", 3])
def test_score_batch_rejects_non_dict_tasks(bad):
    [v] = score_batch([("agent", bad, "x")])
    assert not v.passed and v.details["error"] == "task"
