"""The evaluation suites beyond the in-distribution held-out set, and which suite may be read by whom.

- `heldout`: the SFT distribution's held-out split (`flywheel.tasks.suites.heldout_suite`): the regression
  guard, what non-inferiority protects.
- `production`: held-out draws from what production asks once every drift has happened (the SFT levels
  plus the production-only ones): disjoint from any mined pool by the same content split, and where a
  turn's gain must show.
- `test`: the frozen test suite, shifted further (levels in neither the SFT data nor production, its own
  seed). Only `flywheel evaluate --suite test` and the turn's final report read it: no training path,
  recipe choice or gate does (`flywheel.registry.gate` drops its units before deciding).
"""

from __future__ import annotations

from flywheel.environments.base import BaseEnvironment
from flywheel.environments.task import Task
from flywheel.tasks.suites import TRAIN_SEED, heldout_suite, suite_environment

SUITES = ("heldout", "production", "test")
"""The evaluation suites, in report order."""
GATED_SUITES = ("heldout", "production")
"""The suites the promotion gate may read (never `test`)."""
PRODUCTION_SEED = 19_000


def production_suite(domain: str, n: int, split: str = "heldout", seed: int | None = None,
                     day: int | None = None) -> list[Task]:
    """`n` tasks as production asks them on world day `day` (None: once every drift has happened).
    `split="heldout"` is the production evaluation suite; `"train"` what simulated users are served.
    An environment without a production shift yields its training distribution."""
    env = suite_environment(domain)
    fn = getattr(env, "production_tasks", None)
    if seed is None:
        seed = PRODUCTION_SEED if split == "heldout" else TRAIN_SEED
    return fn(domain, split, n, seed, day) if fn else env.tasks(domain, split, n, seed)


def has_production_shift(domain: str) -> bool:
    """Whether production asks `domain` anything beyond its training distribution (production-only levels, or
    an environment's own `production_tasks`); without a shift its production suite would only repeat the
    held-out one, so evaluation leaves it out."""
    env = suite_environment(domain)
    levels = getattr(env, "production_levels", None)
    if levels is not None:
        return bool(levels)
    fn = getattr(type(env), "production_tasks", None)
    return fn is not None and fn is not BaseEnvironment.production_tasks


def test_suite(domain: str, n: int) -> list[Task]:
    """The frozen test suite of `domain` ([] when its environment has none)."""
    fn = getattr(suite_environment(domain), "test_tasks", None)
    return list(fn(domain, n)) if fn else []


def suite_tasks(suite: str, domain: str, n: int) -> list[Task]:
    """The first `n` tasks of `domain` in evaluation suite `suite` ([] where the domain has no such suite)."""
    if suite == "heldout":
        return heldout_suite(domain, n)[:n]
    if suite == "production":
        return production_suite(domain, n)[:n] if has_production_shift(domain) else []
    if suite == "test":
        return test_suite(domain, n)[:n]
    raise ValueError(f"unknown evaluation suite {suite!r}; known: {SUITES}")


def unit_name(suite: str, domain: str) -> str:
    """How a suite's domain is named in a report: the domain itself for `heldout`, else `suite/domain`."""
    return domain if suite == "heldout" else f"{suite}/{domain}"


def suite_of(unit: str) -> str:
    """The suite a report unit belongs to (`production/math` -> production; `math` -> heldout)."""
    head, sep, _ = unit.partition("/")
    return head if sep and head in SUITES else "heldout"
