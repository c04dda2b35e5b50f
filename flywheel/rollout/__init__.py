"""flywheel.rollout: sampling from a checkpoint: its loader, the chat template, the engines (torch, vLLM).

`generate_for_tasks` is the entry point the trainer and evaluation use: it renders each
task in the checkpoint's own chat template (`task_prompt`: the engine's tokenizer's
`apply_chat_template`, with the task's tools), gives each task the tool environment its environment offers
(`Environment.tool_env`: agent tasks' inventory; none for single-turn domains), and fills
`task_id`, `domain` and `group_id` on every rollout.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from flywheel.environments.registry import default_environments
from flywheel.rollout.base import RolloutEngine, ToolEnv, ToolFactory
from flywheel.rollout.chat import chat_prompt, render_prompt
from flywheel.rollout.types import Rollout, SamplingParams, ToolStep

DEFAULT_MAX_STEPS = 6
"""Tool calls per agent rollout: the longest gold trajectory (3 changes + finish) plus slack."""


def generate_for_tasks(engine: RolloutEngine, tasks: Sequence[Any], n_samples: int = 1,
                       sampling: SamplingParams | None = None, max_steps: int = DEFAULT_MAX_STEPS) -> list[Rollout]:
    """`n_samples` rollouts per task (prompt-major; `group_id` = task index in `tasks`)."""
    tok = getattr(engine, "tokenizer", None)
    prompts = [task_prompt(tok, t) if tok is not None else render_prompt(t.domain, t.prompt) for t in tasks]
    tools = [tool_factory(t) for t in tasks]
    has_tools = any(x is not None for x in tools)
    out = engine.generate(prompts, n_samples, sampling, tools=tools if has_tools else None,
                          max_steps=max_steps if has_tools else 1)
    for r in out:
        t = tasks[r.group_id]
        r.task_id, r.domain = t.task_id, t.domain
    return out


def task_prompt(tokenizer: Any, task: Any) -> str:
    """`task`'s prompt in `tokenizer`'s chat template, with the tools its environment declares (templates
    that know tools render them; the tiny models' leaves them out)."""
    envs = default_environments()
    tools = envs.for_domain(task.domain).tools(task) if envs.has_domain(task.domain) else None
    return chat_prompt(tokenizer, task.domain, task.prompt, tools)


def tool_factory(task: Any) -> ToolFactory | None:
    """A fresh tool environment per sample of `task` (its environment's `tool_env`); None: single-turn."""
    envs = default_environments()
    return envs.for_domain(task.domain).tool_env(task) if envs.has_domain(task.domain) else None


def build_engine(kind: str, model_path: str, device: str = "cpu", dtype: str = "float32", **kw: Any) -> RolloutEngine:
    """An engine by name ("torch" | "vllm") over the checkpoint folder `model_path`."""
    if kind == "torch":
        # torch is heavy: loaded when an engine is built, not when `flywheel.rollout` is imported
        from flywheel.rollout.torch_engine import TorchEngine

        return TorchEngine.from_pretrained(model_path, device=device, dtype=dtype, **kw)
    if kind == "vllm":
        # vllm is optional (the [gpu] extra)
        from flywheel.rollout.vllm_engine import VllmEngine

        return VllmEngine.from_pretrained(model_path, dtype=dtype, **kw)
    raise ValueError(f"engine must be 'torch' or 'vllm', got {kind!r}")


EngineSpec = str | Callable[[str], RolloutEngine]
"""Which engine samples: a kind ("torch" | "vllm", built with defaults) or a factory over a checkpoint
folder (e.g. the Dagster `RolloutEngineResource`'s configured `build`)."""


def open_engine(spec: EngineSpec, model_path: str, device: str = "cpu") -> RolloutEngine:
    """The engine `spec` names over the checkpoint at `model_path`."""
    return spec(model_path) if callable(spec) else build_engine(spec, model_path, device=device)


__all__ = [
    "DEFAULT_MAX_STEPS", "Rollout", "RolloutEngine", "SamplingParams", "ToolEnv", "ToolFactory", "ToolStep",
    "EngineSpec", "build_engine", "generate_for_tasks", "open_engine", "task_prompt", "tool_factory",
]
