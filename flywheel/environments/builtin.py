"""flywheel's built-in domains, each an environment in its own subpackage (`math/`, `code/`, `agent/`):
the entry points `pyproject.toml` declares name these classes, like any plug-in's."""

from __future__ import annotations

from flywheel.environments.agent import AgentEnvironment
from flywheel.environments.code import CodeEnvironment
from flywheel.environments.math import MathEnvironment

BUILTIN_ENVIRONMENTS = (MathEnvironment, CodeEnvironment, AgentEnvironment)
BUILTIN_DOMAINS: tuple[str, ...] = tuple(env.name for env in BUILTIN_ENVIRONMENTS)
"""The domains a turn serves, trains and evaluates by default, in report order."""

__all__ = ["BUILTIN_DOMAINS", "BUILTIN_ENVIRONMENTS", "AgentEnvironment", "CodeEnvironment", "MathEnvironment"]
