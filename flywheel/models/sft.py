"""Supervised fine-tuning on (domain, prompt, response) triples, loss on the response only.

Plain torch: AdamW, linear warmup then cosine decay, gradient clipping, seeded batch
order. The examples are rendered with the shared chat template (`render_example`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from flywheel.progress import progress_bar
from flywheel.rollout.chat import render_prompt


@dataclass(frozen=True)
class SftConfig:
    """How SFT runs (frozen: part of the tiny model's recipe hash)."""

    steps: int = field(default=1600, metadata={"help": "optimizer steps"})
    batch_size: int = field(default=32, metadata={"help": "examples per step"})
    lr: float = field(default=3e-3, metadata={"help": "peak AdamW learning rate"})
    warmup: int = field(default=30, metadata={"help": "linear warmup steps"})
    weight_decay: float = field(default=0.0, metadata={"help": "AdamW weight decay"})
    max_len: int = field(default=256, metadata={"help": "examples are truncated to this many tokens"})
    seed: int = field(default=0, metadata={"help": "batch order seed"})


def tokenize_examples(tokenizer: Any, examples: Sequence[tuple[str, str, str]], max_len: int) -> list[tuple[list[int], int]]:
    """(ids, prompt_len) per example: prompt, response, EOS."""
    out = []
    for domain, prompt, response in examples:
        p = tokenizer(render_prompt(domain, prompt), add_special_tokens=False)["input_ids"]
        r = tokenizer(response, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        out.append(((p + r)[:max_len], len(p)))
    return out


def _batch(items: list[tuple[list[int], int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    width = max(len(ids) for ids, _ in items)
    ids = torch.full((len(items), width), pad_id, dtype=torch.long)
    mask = torch.zeros_like(ids)
    labels = torch.full_like(ids, -100)
    for i, (x, plen) in enumerate(items):
        ids[i, : len(x)] = torch.tensor(x)
        mask[i, : len(x)] = 1
        labels[i, plen: len(x)] = torch.tensor(x[plen:])
    return ids, mask, labels


def _length_bucketed(data: list[tuple[list[int], int]], bs: int, gen: torch.Generator) -> list[list[int]]:
    """One epoch of batches with similar lengths (little padding), in random order."""
    perm = torch.randperm(len(data), generator=gen).tolist()
    chunks = [sorted(perm[i: i + 16 * bs], key=lambda j: len(data[j][0])) for i in range(0, len(perm), 16 * bs)]
    batches = [c[i: i + bs] for c in chunks for i in range(0, len(c), bs)]
    order = torch.randperm(len(batches), generator=gen).tolist()
    return [batches[i] for i in order]


def supervised_finetune(model: Any, tokenizer: Any, examples: Sequence[tuple[str, str, str]],
                        cfg: SftConfig, device: str = "cpu",
                        on_step: Callable[[int, float], None] | None = None,
                        desc: str = "SFT of the base model") -> list[float]:
    """Train `model` in place on `examples`; returns the loss of every step (`desc` names its progress)."""
    data = tokenize_examples(tokenizer, examples, cfg.max_len)
    gen = torch.Generator().manual_seed(cfg.seed)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay, betas=(0.9, 0.98))

    def lr_at(step: int) -> float:
        if step < cfg.warmup:
            return cfg.lr * (step + 1) / cfg.warmup
        frac = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
        return cfg.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))

    model.train()
    losses = []
    batches: list[list[int]] = []
    bar = progress_bar(cfg.steps, desc)
    for step in range(cfg.steps):
        if not batches:
            batches = _length_bucketed(data, cfg.batch_size, gen)
        idx = batches.pop()
        ids, mask, labels = (t.to(device) for t in _batch([data[i] for i in idx], tokenizer.pad_token_id))
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(float(loss.detach()))
        bar.update(1)
        if step % 20 == 0:
            bar.set_postfix(loss=f"{losses[-1]:.3f}", refresh=False)
        if on_step is not None:
            on_step(step, losses[-1])
    bar.close()
    model.eval()
    return losses
