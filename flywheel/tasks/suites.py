"""Named task suites: the training corpus and the held-out evaluation sets of any domain.

Every domain, built in or installed, is an environment (`flywheel.environments`): a suite is what the
environment serving the domain yields for a split and seed. The split is the environment's own, by
content (the built-in domains hold out one prompt in five by a hash), so no seed or size ever lets a
held-out prompt into training. Mining also decontaminates logged prompts against the held-out sets by
n-gram overlap.
"""

from __future__ import annotations

from flywheel.environments.base import SPLITS, is_heldout
from flywheel.environments.builtin import BUILTIN_DOMAINS, BUILTIN_ENVIRONMENTS
from flywheel.environments.registry import environment_for
from flywheel.environments.task import Task

DOMAINS = BUILTIN_DOMAINS
"""The built-in domains (what a turn serves by default); any other is served by its installed environment
(`flywheel envs list`)."""
TRAIN_SEED, HELDOUT_SEED = 1_000, 9_000


HELDOUT_SIZE = {env.name: env.heldout_tasks for env in BUILTIN_ENVIRONMENTS}
"""Evaluation set sizes of the built-in domains (each environment's `heldout_size`): what
`benchmarks/bench_gate.py` found the gate needs (x 8 samples) to catch a +5-point gain. A suite is a prefix
of a longer one, so a larger size keeps every earlier task. Each environment yields that many held-out tasks
(`tests/tasks/test_suites.py`), so the default `flywheel evaluate --help` shows is what is evaluated; counting
them here instead would build every held-out suite on each CLI start (0.7 s once code had 240)."""


def is_heldout_prompt(prompt: str) -> bool:
    """One prompt in five, chosen by content, belongs to the held-out split."""
    return is_heldout(prompt)


def suite_environment(domain: str):
    """`environment_for(domain)` for a suite: an unknown domain is a ValueError naming the installed ones."""
    try:
        return environment_for(domain)
    except KeyError as e:  # UnknownDomainError: the message names the installed domains
        raise ValueError(str(e)) from None


def domain_suite(domain: str, n: int, seed: int, split: str = "train") -> list[Task]:
    """`n` distinct tasks of `domain` from `split` ("train" or "heldout"), deterministic in `seed`, from the
    installed environment serving the domain."""
    if split not in SPLITS:
        raise ValueError(f"split must be 'train' or 'heldout', got {split!r}")
    return suite_environment(domain).tasks(domain, split, n, seed)


def heldout_suite(domain: str, n: int | None = None) -> list[Task]:
    """The evaluation set of a domain; training data never contains these prompts."""
    if not n:
        n = suite_environment(domain).heldout_size(domain)
    return domain_suite(domain, n, HELDOUT_SEED, split="heldout")


def train_suite(domain: str, n: int, seed: int = TRAIN_SEED) -> list[Task]:
    return domain_suite(domain, n, seed, split="train")
