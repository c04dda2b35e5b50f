"""Rollout engines: shapes, masks, log-probs vs a plain forward pass, determinism, stops, tools, weight sync."""

from __future__ import annotations

import copy

import pytest
import torch

pytest_plugins = ("tests.fixtures_models",)


@pytest.fixture
def engine(tiny_model):
    from flywheel.rollout.torch_engine import TorchEngine

    model, tok = tiny_model
    return TorchEngine(model, tok, device="cpu", max_batch_size=5)


def _prompts(n_per=2):
    from flywheel.rollout.chat import render_prompt
    from flywheel.tasks.suites import heldout_suite

    return [render_prompt(d, t.prompt) for d in ("math", "code", "agent") for t in heldout_suite(d, n_per)]


def test_generate_shapes_masks_and_order(engine):
    from flywheel.rollout import RolloutEngine
    from flywheel.rollout.types import SamplingParams

    assert isinstance(engine, RolloutEngine)
    prompts = _prompts()
    rs = engine.generate(prompts, n_samples=3, sampling=SamplingParams(max_new_tokens=12, seed=3))
    assert len(rs) == len(prompts) * 3
    for k, r in enumerate(rs):
        assert r.group_id == k // 3 and r.prompt == prompts[k // 3] and r.meta["sample"] == k % 3
        assert r.prompt_ids == engine.encode(r.prompt)
        assert len(r.token_ids) == len(r.logprobs) == len(r.loss_mask) and 1 <= len(r.token_ids) <= 12
        assert all(m == 1 for m in r.loss_mask) and all(lp <= 0 for lp in r.logprobs)
        assert r.finish_reason == ("stop" if r.token_ids[-1] == engine.eos_id else "length")
        assert engine.eos_id not in r.token_ids[:-1]  # nothing sampled after EOS
        assert r.policy_version == 0


@pytest.mark.parametrize("temperature,fast", [(1.0, True), (0.7, True), (0.0, True), (1.0, False), (0.7, False)])
def test_logprobs_equal_a_plain_forward_pass(engine, temperature, fast):
    """Left-padded, KV-cached, batch-compacted sampling reports exactly what a forward pass computes
    (both decode paths: the preallocated-KV Llama path and the generic DynamicCache one)."""
    from flywheel.rollout.torch_engine import recompute_logprobs
    from flywheel.rollout.types import SamplingParams

    engine.fast_path = fast
    rs = engine.generate(_prompts(), 2, SamplingParams(temperature=temperature, max_new_tokens=20, seed=5))
    assert len({len(r.prompt_ids) for r in rs}) > 1  # left padding in play
    if temperature > 0:
        assert len({len(r.token_ids) for r in rs}) > 1  # rows finished early: batch compaction in play
    for r in rs:
        ref = recompute_logprobs(engine.model, r.prompt_ids, r.token_ids, temperature=temperature)
        torch.testing.assert_close(torch.tensor(r.logprobs), ref, atol=2e-4, rtol=0)


@pytest.mark.parametrize("fast", [True, False])
def test_greedy_matches_hf_generate(engine, fast):
    from flywheel.rollout.types import SamplingParams

    engine.fast_path = fast
    prompt = _prompts(1)[0]
    r = engine.generate([prompt], 1, SamplingParams(temperature=0.0, max_new_tokens=15))[0]
    ids = torch.tensor([r.prompt_ids])
    hf = engine.model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), do_sample=False,
                               max_new_tokens=15, eos_token_id=engine.eos_id, pad_token_id=engine.pad_id)
    assert r.token_ids == hf[0, ids.shape[1]:].tolist()[: len(r.token_ids)]


def test_seeded_sampling_is_deterministic(engine):
    from flywheel.rollout.types import SamplingParams

    p = _prompts()
    a = engine.generate(p, 2, SamplingParams(max_new_tokens=16, seed=11))
    b = engine.generate(p, 2, SamplingParams(max_new_tokens=16, seed=11))
    c = engine.generate(p, 2, SamplingParams(max_new_tokens=16, seed=12))
    assert [r.token_ids for r in a] == [r.token_ids for r in b]
    assert [r.logprobs for r in a] == [r.logprobs for r in b]
    assert [r.token_ids for r in a] != [r.token_ids for r in c]


def test_stop_string_ends_the_response(engine):
    from flywheel.rollout.types import SamplingParams

    p = _prompts(1)[:1]
    full = engine.generate(p, 1, SamplingParams(max_new_tokens=30, seed=2, temperature=0.0))[0]
    stop = full.text[3:6]
    assert len(stop) == 3
    cut = engine.generate(p, 1, SamplingParams(max_new_tokens=30, seed=2, temperature=0.0, stop=(stop,)))[0]
    assert cut.finish_reason == "stop" and stop in cut.text and len(cut.token_ids) < len(full.token_ids)
    assert cut.token_ids == full.token_ids[: len(cut.token_ids)]
    assert stop not in engine.decode_response(cut.token_ids[:-1])  # stopped at the first token completing it


def test_update_weights_changes_samples_and_tags_version(tiny_model):
    from flywheel.rollout.torch_engine import TorchEngine
    from flywheel.rollout.types import SamplingParams

    model, tok = tiny_model
    eng = TorchEngine(copy.deepcopy(model), tok)
    sp = SamplingParams(max_new_tokens=10, seed=0, temperature=0.0)
    before = eng.generate(_prompts(1), 1, sp)
    new = {k: v + 0.05 * torch.randn_like(v) for k, v in model.state_dict().items()}
    eng.update_weights(new, version=7)
    after = eng.generate(_prompts(1), 1, sp)
    assert all(r.policy_version == 7 for r in after)
    assert [r.token_ids for r in before] != [r.token_ids for r in after]
    torch.testing.assert_close(eng.model.state_dict()["lm_head.weight"], new["lm_head.weight"])
    with pytest.raises(KeyError):
        eng.update_weights({"nope.weight": torch.zeros(1)}, 8)


def test_execute_call_runs_real_env_and_reports_errors():
    from flywheel.rollout.multistep import execute_call
    from flywheel.tasks.agent_env import InventoryEnv

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
    from flywheel.models.sft import SftConfig, supervised_finetune
    from flywheel.rollout.checkpoint import load_model
    from flywheel.tasks.suites import train_suite

    model, tok = load_model(tiny_model_dir, trainable=True)
    tasks = [t for t in train_suite("agent", 40) if t.meta["changes"] == 2][:2]
    supervised_finetune(model, tok, [("agent", t.prompt, t.solution) for t in tasks],
                        SftConfig(steps=120, batch_size=2, lr=1e-2, warmup=5))
    return model, tok, tasks


def test_multistep_rollout_executes_real_tool_calls(agent_model):
    from flywheel.rollout import generate_for_tasks
    from flywheel.rollout.torch_engine import TorchEngine, recompute_logprobs
    from flywheel.rollout.types import SamplingParams
    from flywheel.tasks.agent_env import InventoryEnv
    from flywheel.tasks.toolcalls import RESULT_CLOSE, RESULT_OPEN

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


def test_vllm_engine_without_vllm_says_how_to_get_it(tiny_model_dir):
    pytest.importorskip("torch")
    try:
        import vllm  # noqa: F401

        pytest.skip("vllm is installed here")
    except ImportError:
        pass
    from flywheel.rollout import build_engine

    with pytest.raises(RuntimeError, match=r"\[gpu\]"):
        build_engine("vllm", str(tiny_model_dir))


@pytest.mark.gpu
def test_vllm_engine_generates_and_syncs_weights(tiny_model_dir):
    from flywheel.rollout import build_engine, generate_for_tasks
    from flywheel.rollout.checkpoint import load_model
    from flywheel.rollout.types import SamplingParams
    from flywheel.tasks.suites import heldout_suite

    eng = build_engine("vllm", str(tiny_model_dir), dtype="float32", gpu_memory_utilization=0.2)
    tasks = heldout_suite("math", 2) + heldout_suite("agent", 2)
    sp = SamplingParams(temperature=0.0, max_new_tokens=24)
    before = generate_for_tasks(eng, tasks, 2, sp, max_steps=2)
    assert len(before) == 8 and all(len(r.token_ids) == len(r.logprobs) for r in before)
    model, _ = load_model(tiny_model_dir)
    new = {k: v + 0.05 * torch.randn_like(v) for k, v in model.state_dict().items()}
    eng.update_weights(new, version=3)
    after = generate_for_tasks(eng, tasks, 2, sp, max_steps=2)
    assert all(r.policy_version == 3 for r in after)
    assert [r.token_ids for r in before] != [r.token_ids for r in after]
