"""Shared fixtures of the repo-environment tests: one environment over the module's warm sandbox pool."""

from __future__ import annotations

import pytest

from flywheel.environments.repo.env import RepoEnvironment


@pytest.fixture(scope="module")
def repo_env(sandbox_pool):
    """The `repo` environment judging in the module's warm local sandbox pool."""
    return RepoEnvironment(sandbox=sandbox_pool)
