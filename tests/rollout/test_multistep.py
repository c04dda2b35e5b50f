"""Multi-step rollouts: real tool calls executed in the environment, illegal calls and the step cap."""

from __future__ import annotations

import pytest
import torch


def test_execute_call_runs_real_env_and_reports_errors():
    from flywheel.environments.agent.inventory import InventoryEnv
    from flywheel.rollout.multistep import execute_call

    env = InventoryEnv.from_initial({"apple": 2})
    ok = execute_call(env, '<tool_call>{"name":"add","arguments":{"item":"apple","qty":3}}</tool_call>')
    assert ok.result_text == "apple=5" and ok.error is None and env.state["apple"] == 5
    bad = execute_call(env, '<tool_call>{"name":"remove","arguments":{"item":"apple","qty":9}}</tool_call>')
    assert bad.result_text.startswith("error:") and "IllegalCall" in bad.error and env.state["apple"] == 5
    junk = execute_call(env, "<tool_call>{not json</tool_call>")
    assert junk.result_text.startswith("error: tool call is not valid JSON")


@pytest.fixture(scope="module")
def agent_model(tiny_model_dir):
    """The quick model overfit on two agent tasks' gold trajectories, so greedy replays them."""
    from flywheel.rollout.checkpoint import load_model
    from flywheel.tasks.suites import train_suite
    from flywheel.train.common.sft import SftConfig, supervised_finetune

    model, tok = load_model(tiny_model_dir, trainable=True)
    tasks = [t for t in train_suite("agent", 40) if t.meta["changes"] == 2][:2]
    supervised_finetune(model, tok, [("agent", t.prompt, t.solution) for t in tasks],
                        SftConfig(steps=120, batch_size=2, lr=1e-2, warmup=5))
    return model, tok, tasks


def test_multistep_rollout_executes_real_tool_calls(agent_model):
    from flywheel.environments.agent.inventory import InventoryEnv
    from flywheel.environments.toolcalls import RESULT_CLOSE, RESULT_OPEN
    from flywheel.rollout import generate_for_tasks
    from flywheel.rollout.torch_engine import TorchEngine, recompute_logprobs
    from flywheel.rollout.types import SamplingParams

    model, tok, tasks = agent_model
    eng = TorchEngine(model, tok)
    rs = generate_for_tasks(eng, tasks, 2, SamplingParams(temperature=0.0, max_new_tokens=200), max_steps=6)
    assert [r.task_id for r in rs] == [tasks[0].task_id] * 2 + [tasks[1].task_id] * 2
    for r in rs:
        task = tasks[r.group_id]
        assert r.text == task.solution  # the gold trajectory, results computed by the real env
        assert len(r.steps) == len(task.reference["solution_calls"]) and r.finish_reason == "stop"
        env = InventoryEnv.from_initial(task.reference["initial_state"])
        for step, (name, args) in zip(r.steps, task.reference["solution_calls"], strict=True):
            assert step.error is None and step.result_text == env.call(name, args)
        assert env.goal_reached(task.reference["goal"])
        # spliced results: mask 0 and logprob 0; every sampled token: mask 1 and its true log-prob
        masked = [t for t, m in zip(r.token_ids, r.loss_mask, strict=True) if m == 0]
        assert tok.decode(masked).count(RESULT_OPEN) == len(r.steps) == tok.decode(masked).count(RESULT_CLOSE)
        assert all(lp == 0.0 for lp, m in zip(r.logprobs, r.loss_mask, strict=True) if m == 0)
        ref = recompute_logprobs(model, r.prompt_ids, r.token_ids)
        mask = torch.tensor(r.loss_mask, dtype=torch.bool)
        torch.testing.assert_close(torch.tensor(r.logprobs)[mask], ref[mask], atol=2e-4, rtol=0)


def test_multistep_illegal_calls_and_max_steps(tiny_model):
    """A sampled (mostly garbage) policy: illegal calls become error results, never a crash."""
    from flywheel.rollout import generate_for_tasks
    from flywheel.rollout.torch_engine import TorchEngine
    from flywheel.rollout.types import SamplingParams
    from flywheel.tasks.suites import heldout_suite

    model, tok = tiny_model
    tasks = heldout_suite("agent", 4) + heldout_suite("math", 2)
    rs = generate_for_tasks(TorchEngine(model, tok), tasks, 4, SamplingParams(max_new_tokens=120, seed=1), max_steps=2)
    assert len(rs) == 24
    for r in rs:
        assert len(r.steps) <= 2 and len(r.token_ids) == len(r.loss_mask) == len(r.logprobs)
        assert r.finish_reason in ("stop", "length", "max_steps")
        if r.domain == "math":
            assert r.steps == [] and all(m == 1 for m in r.loss_mask)
        if r.finish_reason == "max_steps":
            assert len(r.steps) == 2
