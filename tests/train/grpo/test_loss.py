"""GRPO's pure functions: advantages, clipping, KL, masking, aggregation, finite rewards."""

from __future__ import annotations

import math

import pytest
import torch

from flywheel.train.grpo import loss as grpo
from flywheel.verifiers.verdict import VerifierInfraError


def test_group_advantages_are_normalized_per_group():
    rewards = torch.tensor([1.0, 0.0, 0.0, 0.0, 5.0, 3.0])
    gids = torch.tensor([0, 0, 0, 0, 1, 1])
    adv = grpo.grpo_advantages(rewards, gids)
    g0, g1 = adv[:4], adv[4:]
    assert abs(float(g0.mean())) < 1e-6 and abs(float(g1.mean())) < 1e-6
    assert float(g0.std()) == pytest.approx(1.0, abs=1e-4)
    assert float(g1[0]) > 0 > float(g1[1])
    assert torch.argmax(g0) == 0


def test_flat_group_has_zero_advantage_not_nan():
    adv = grpo.grpo_advantages(torch.tensor([1.0, 1.0, 1.0, 0.0, 1.0]), torch.tensor([0, 0, 0, 1, 1]))
    assert torch.all(adv[:3] == 0)
    assert torch.isfinite(adv).all()


def test_dr_grpo_only_centers():
    adv = grpo.ADVANTAGE_ESTIMATORS["dr_grpo"](torch.tensor([2.0, 0.0]), torch.tensor([0, 0]))
    assert adv.tolist() == [1.0, -1.0]


def test_non_finite_reward_raises():
    with pytest.raises(VerifierInfraError):
        grpo.grpo_advantages(torch.tensor([1.0, float("nan")]), torch.tensor([0, 0]))
    with pytest.raises(VerifierInfraError):
        grpo.groups_with_signal([0.0, float("inf")])


def test_loss_masks_padding_and_tool_tokens():
    torch.manual_seed(0)
    logp = torch.randn(2, 5, requires_grad=True)
    old = logp.detach().clone()
    adv = torch.tensor([1.0, -1.0])
    mask = torch.tensor([[1, 1, 0, 0, 0], [1, 0, 1, 1, 0]], dtype=torch.float32)
    loss, stats = grpo.policy_loss(logp, old, adv, mask)
    loss.backward()
    assert stats.tokens == 5
    # masked positions get exactly zero gradient
    assert torch.all(logp.grad[mask == 0] == 0)
    assert torch.all(logp.grad[mask == 1] != 0)
    # on-policy: ratio 1, loss = -mean(adv over tokens) = -(2*1 + 3*-1)/5
    assert float(loss.detach()) == pytest.approx(1 / 5, abs=1e-6)


def test_token_mean_weighs_tokens_and_seq_mean_weighs_sequences():
    per_token = torch.tensor([[1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 0.0]])
    mask = torch.tensor([[1, 1, 1, 1], [1, 0, 0, 0]], dtype=torch.float32)
    assert float(grpo.aggregate(per_token, mask, "token-mean")) == pytest.approx(4 / 5)
    assert float(grpo.aggregate(per_token, mask, "seq-mean-token-mean")) == pytest.approx(0.5)


def test_micro_batches_with_global_normalizer_equal_full_batch():
    torch.manual_seed(1)
    logp = torch.randn(4, 6)
    old = logp + 0.1 * torch.randn(4, 6)
    adv = torch.randn(4)
    mask = (torch.rand(4, 6) > 0.3).float()
    full, _ = grpo.policy_loss(logp, old, adv, mask)
    n = float(mask.sum())
    parts = [grpo.policy_loss(logp[i : i + 2], old[i : i + 2], adv[i : i + 2], mask[i : i + 2], normalizer=n)[0] for i in (0, 2)]
    assert float(sum(parts)) == pytest.approx(float(full), rel=1e-6)


def test_ratio_clipping_stops_gradient_beyond_the_bound():
    old = torch.zeros(1, 3)
    # ratios e^0.5=1.65 (above 1+0.28), e^0=1, e^-0.5=0.61 (below 1-0.2)
    logp = torch.tensor([[0.5, 0.0, -0.5]], requires_grad=True)
    mask = torch.ones(1, 3)
    loss, stats = grpo.policy_loss(logp, old, torch.tensor([1.0]), mask, clip_low=0.2, clip_high=0.28)
    loss.backward()
    # positive advantage: the too-high ratio is clipped (no grad); the too-low one is not (pessimistic min)
    assert logp.grad[0, 0] == 0
    assert logp.grad[0, 1] != 0 and logp.grad[0, 2] != 0
    assert stats.clipped_tokens == 1
    logp.grad = None
    loss, stats = grpo.policy_loss(logp, old, torch.tensor([-1.0]), mask, clip_low=0.2, clip_high=0.28)
    loss.backward()
    assert logp.grad[0, 2] == 0 and logp.grad[0, 0] != 0
    assert stats.clipped_tokens == 1


def test_k3_kl_is_zero_at_reference_and_positive_elsewhere():
    a = torch.tensor([-1.0, -2.0, -0.5])
    assert torch.allclose(grpo.kl_k3(a, a), torch.zeros(3))
    assert torch.all(grpo.kl_k3(a, a + 0.3) > 0)
    logp = a.clone().unsqueeze(0).requires_grad_(True)
    mask = torch.ones(1, 3)
    base, _ = grpo.policy_loss(logp, logp.detach(), torch.tensor([0.0]), mask)
    with_kl, st = grpo.policy_loss(logp, logp.detach(), torch.tensor([0.0]), mask, ref_logprobs=a.unsqueeze(0) + 0.3, kl_coef=0.1)
    assert float(with_kl) > float(base)
    assert st.kl_sum > 0


def test_token_logprobs_and_entropy_shapes():
    logits = torch.randn(2, 4, 7)
    targets = torch.randint(0, 7, (2, 4))
    lp = grpo.token_logprobs(logits, targets, temperature=0.7)
    ref = torch.log_softmax(logits / 0.7, -1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    assert lp.shape == (2, 4) and torch.allclose(lp, ref, atol=1e-5)
    ent = grpo.entropy_from_logits(torch.zeros(1, 1, 8))
    assert float(ent) == pytest.approx(math.log(8), abs=1e-5)
