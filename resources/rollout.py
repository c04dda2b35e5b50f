"""RolloutEngineResource: which engine samples rollouts and where (torch on CPU/GPU, or vLLM on GPUs)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import dagster as dg
from pydantic import Field


class RolloutEngineResource(dg.ConfigurableResource):
    """Where rollouts are sampled. `engine`: torch (default, CPU or GPU) | vllm (GPU, extra `[gpu]`)."""

    engine: str = Field(default="torch", description="torch | vllm")
    device: str = Field(default="auto", description="torch engine: auto | cpu | cuda (auto: CUDA where present)")
    dtype: str = Field(default="float32", description="float32 | bfloat16 | float16")
    max_batch_size: int = Field(default=64, description="torch engine: sequences per forward pass")
    num_threads: int = Field(default=0, description="torch engine CPU threads while sampling (0: leave torch's)")
    gpu_memory_utilization: float = Field(default=0.5, description="vllm: share of GPU memory for weights + KV cache")
    max_model_len: int = Field(default=2048, description="vllm: longest prompt + response")
    enforce_eager: bool = Field(default=True, description="vllm: skip CUDA graph capture (fast start for small runs)")

    def build(self, model_path: str, device: str | None = None) -> Any:
        """A `RolloutEngine` over the checkpoint folder `model_path` (`device` from GpuResource wins)."""
        from flywheel.gpu import GpuSpec, resolve_device
        from flywheel.rollout import build_engine

        if self.engine == "vllm":
            return build_engine("vllm", model_path, dtype=self.dtype, gpu_memory_utilization=self.gpu_memory_utilization,
                                max_model_len=self.max_model_len, enforce_eager=self.enforce_eager)
        dev = device or resolve_device(GpuSpec(count=1), self.device)
        return build_engine("torch", model_path, device=dev, dtype=self.dtype, max_batch_size=self.max_batch_size,
                            num_threads=self.num_threads or None)


    def factory(self, device: str | None = None) -> Callable[[str], Any]:
        """`model_path -> engine` as configured here: what evaluation and the production responder build."""
        return lambda model_path: self.build(model_path, device)

    def check_trainable(self) -> None:
        """GRPO samples from the policy's in-memory weights through the torch engine; say so instead of
        silently ignoring a vLLM choice (vLLM rollouts in training need in-memory weight sync)."""
        if self.engine != "torch":
            raise dg.Failure(f"rollout_engine.engine={self.engine!r}: training rollouts run on the torch engine "
                             "(they sample the policy's in-memory weights); evaluation and production traffic "
                             "use the configured engine. Set engine=torch for runs that train.")


def default_resources() -> dict[str, Any]:
    return {"rollout_engine": RolloutEngineResource()}
