"""Named task suites: the training corpus and the held-out evaluation sets, per domain.

The split is by a hash of the prompt (one prompt in five is held out), so no seed or
size ever lets a held-out prompt into training. Mining also decontaminates logged
prompts against the held-out sets by n-gram overlap.
"""

from __future__ import annotations

import hashlib

from flywheel.tasks.agent_tasks import agent_suite
from flywheel.tasks.base import Task
from flywheel.tasks.code_tasks import code_suite
from flywheel.tasks.math_tasks import math_suite

DOMAINS = ("math", "code", "agent")
"""The built-in domains; any other is served by its installed environment (`flywheel envs list`)."""
TRAIN_SEED, HELDOUT_SEED = 1_000, 9_000
HELDOUT_SIZE = {"math": 200, "code": 60, "agent": 60}
ENV_HELDOUT_SIZE = 50
"""Evaluation set size of an environment's domain (one of many: the family's roll-up has the power)."""
"""Evaluation set sizes: what `benchmarks/bench_gate.py` found the gate needs (x 8 samples) to catch a
+5-point gain. A suite is a prefix of a longer one, so a larger size keeps every earlier task. The code families
yield only 24 held-out prompts today: code is evaluated on 24 until `code_tasks` has more families."""


def is_heldout_prompt(prompt: str) -> bool:
    """One prompt in five, chosen by content, belongs to the held-out split."""
    return hashlib.sha256(prompt.encode()).digest()[0] % 5 == 0


def domain_suite(domain: str, n: int, seed: int, split: str = "train") -> list[Task]:
    """`n` distinct tasks of `domain` from `split` ("train" or "heldout"), deterministic in `seed`; a domain
    beyond math/code/agent comes from the installed environment serving it."""
    if split not in ("train", "heldout"):
        raise ValueError(f"split must be 'train' or 'heldout', got {split!r}")
    want_heldout = split == "heldout"

    def keep(t: Task) -> bool:
        return is_heldout_prompt(t.prompt) == want_heldout

    if domain == "math":
        return math_suite(n, seed, keep=keep)
    if domain == "code":
        return code_suite(n, seed, keep=keep)
    if domain == "agent":
        return agent_suite(n, seed, keep=keep)
    from flywheel.plugin_hooks import environment_for

    try:
        env = environment_for(domain)
    except KeyError as e:  # UnknownDomainError: the message names the installed domains
        raise ValueError(str(e)) from None
    return env.tasks(domain, split, n, seed)


def heldout_suite(domain: str, n: int | None = None) -> list[Task]:
    """The evaluation set of a domain; training data never contains these prompts."""
    return domain_suite(domain, n or HELDOUT_SIZE.get(domain, ENV_HELDOUT_SIZE), HELDOUT_SEED, split="heldout")


def train_suite(domain: str, n: int, seed: int = TRAIN_SEED) -> list[Task]:
    return domain_suite(domain, n, seed, split="train")
