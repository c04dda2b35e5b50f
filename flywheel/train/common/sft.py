"""Supervised fine-tuning on (domain, prompt, response) triples, loss on the response only.

The fine-tuning step of RFT and of the base model's build: the shared stack (`optim`: AdamW,
linear warmup then cosine decay, gradient clipping; `backend`: torch or DeepSpeed as the
placement says), seeded batch order. The examples are rendered in the checkpoint's own chat template.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from flywheel.progress import progress_bar
from flywheel.rollout.chat import chat_example_ids
from flywheel.train.common.backend import make_backend
from flywheel.train.common.placement import Placement
from flywheel.train.common.schedule import OptimSpec


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
    adam_betas: tuple[float, float] = field(default=(0.9, 0.98), metadata={"help": "AdamW betas"})
    max_grad_norm: float = field(default=1.0, metadata={"help": "gradient clipping by global norm (0 disables)"})

    def optim(self) -> OptimSpec:
        """This schedule's optimizer values: warmup, then cosine decay to 10% at the last step."""
        return OptimSpec(lr=self.lr, betas=tuple(self.adam_betas), weight_decay=self.weight_decay,
                         max_grad_norm=self.max_grad_norm, warmup_steps=self.warmup, cosine=True, horizon=self.steps)

    def to_dict(self) -> dict[str, Any]:
        """Its fields, less those declared after tiny-v1 was built while at their default (the recipe hash
        keys the build cache: a recipe that did not change hashes as before)."""
        d = dataclasses.asdict(self)
        for name in LATER_FIELDS:
            if d[name] == SftConfig.__dataclass_fields__[name].default:
                d.pop(name)
        return d


LATER_FIELDS = ("adam_betas", "max_grad_norm")
"""`SftConfig` fields that were constants of the loop when the tiny models' recipe hashes were fixed."""


def tokenize_examples(tokenizer: Any, examples: Sequence[tuple[str, str, str]], max_len: int) -> list[tuple[list[int], int]]:
    """(ids, prompt_len) per example: the prompt in the tokenizer's chat template, response, EOS."""
    out = []
    for domain, prompt, response in examples:
        ids, plen = chat_example_ids(tokenizer, domain, prompt, response)
        out.append((ids[:max_len], plen))
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
                        cfg: SftConfig, placement: Placement | None = None,
                        on_step: Callable[[int, float], None] | None = None,
                        desc: str = "SFT of the base model") -> list[float]:
    """Train `model` in place on `examples` through the backend `placement` names (default: torch on CPU;
    its device resolved); returns the loss of every step (`desc` names its progress)."""
    data = tokenize_examples(tokenizer, examples, cfg.max_len)
    gen = torch.Generator().manual_seed(cfg.seed)
    backend = make_backend(model, cfg.optim(), placement or Placement(device="cpu"), cfg.batch_size)
    losses = []
    batches: list[list[int]] = []
    bar = progress_bar(cfg.steps, desc)
    for step in range(cfg.steps):
        if not batches:
            batches = _length_bucketed(data, cfg.batch_size, gen)
        idx = batches.pop()
        ids, mask, labels = (t.to(backend.device) for t in _batch([data[i] for i in idx], tokenizer.pad_token_id))
        loss = backend.lm_loss(ids, mask, labels)
        backend.backward(loss)
        backend.step()
        losses.append(float(loss.detach()))
        bar.update(1)
        if step % 20 == 0:
            bar.set_postfix(loss=f"{losses[-1]:.3f}", refresh=False)
        if on_step is not None:
            on_step(step, losses[-1])
    bar.close()
    model.eval()
    return losses
