"""The torch rollout engine: shapes, masks, log-probs vs a plain forward pass, determinism, stops, weight sync."""

from __future__ import annotations

import copy

import pytest
import torch


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
