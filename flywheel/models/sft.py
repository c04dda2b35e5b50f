"""Supervised fine-tuning on (domain, prompt, response) triples, loss on the response only.

Plain torch: AdamW, linear warmup then cosine decay, gradient clipping, seeded batch
order. The examples are rendered with the shared chat template (`render_example`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from flywheel.models.chat import render_prompt


@dataclass(frozen=True)
class SftConfig:
    """How SFT runs (frozen: part of the tiny model's recipe hash)."""

    steps: int = field(default=400, metadata={"help": "optimizer steps"})
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


def supervised_finetune(model: Any, tokenizer: Any, examples: Sequence[tuple[str, str, str]],
                        cfg: SftConfig, device: str = "cpu") -> list[float]:
    """Train `model` in place on `examples`; returns the loss of every step."""
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
    for step in range(cfg.steps):
        idx = torch.randint(len(data), (cfg.batch_size,), generator=gen).tolist()
        ids, mask, labels = (t.to(device) for t in _batch([data[i] for i in idx], tokenizer.pad_token_id))
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(float(loss.detach()))
    model.eval()
    return losses
