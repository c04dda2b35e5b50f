"""Shared fixtures of the verifier tests."""

from __future__ import annotations

import pytest

from flywheel.environments.code.verifier import CodeVerifier


@pytest.fixture(scope="module")
def cv(sandbox_pool):
    """The code verifier over the session's warm sandbox pool."""
    return CodeVerifier(sandbox=sandbox_pool, timeout_s=2.0)
