"""The rollout engine protocol: what the trainer and evaluation call, whatever does the sampling."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from flywheel.rollout.types import Rollout, SamplingParams


@runtime_checkable
class ToolEnv(Protocol):
    """A tool environment a multi-step rollout talks to (e.g. `InventoryEnv`).

    `call` returns the result text or raises (any exception becomes an error result the
    model sees, never a crash of the rollout); `done` ends the episode.
    """

    done: bool

    def call(self, name: str, args: dict[str, Any]) -> str: ...


ToolFactory = Callable[[], ToolEnv]
"""Builds a fresh environment for one sample (each of the n samples gets its own)."""


@runtime_checkable
class RolloutEngine(Protocol):
    """Samples responses and reports, per token, what was sampled and its log-probability.

    `generate` returns `len(prompts) * n_samples` rollouts, prompt-major (the samples of
    prompt i are at `i*n_samples : (i+1)*n_samples`, `group_id == i`). `tools[i]`, when
    given, is a factory of prompt i's tool environment (None: no tools for that prompt);
    with tools, up to `max_steps` tool calls are executed per sample.
    `update_weights` loads a new policy (same parameter names as the HF model) and tags
    the rollouts that follow with `version`.
    """

    name: str
    policy_version: int

    def generate(
        self,
        prompts: Sequence[str],
        n_samples: int = 1,
        sampling: SamplingParams | None = None,
        tools: Sequence[ToolFactory | None] | None = None,
        max_steps: int = 1,
    ) -> list[Rollout]: ...

    def update_weights(self, state_dict: Mapping[str, Any], version: int) -> None: ...
