"""What the training tests share: a rule-based reward a random policy earns sometimes, and that policy."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from flywheel.verifiers.verdict import Verdict


def _digit_reward(domain: str, task: dict, response: str) -> Verdict:
    n = sum(c.isdigit() for c in response)
    return Verdict(min(n, 3) / 3, n >= 3, f"{n} digits")


@pytest.fixture(scope="session")
def digit_reward() -> Callable[[str, dict, str], Verdict]:
    """A score function: how many digits the response wrote (capped at 3; passed at 3)."""
    return _digit_reward


@pytest.fixture(scope="module")
def policy_dir(random_tiny, tmp_path_factory):
    """A random-init tiny policy, built once per test module (runs read it, never write it)."""
    return random_tiny(tmp_path_factory.mktemp("tiny_policy"))
