"""What an accelerator-using step needs, and what that becomes on each platform.

One `GpuSpec` per asset becomes a Dagster concurrency pool name, dagster-k8s
resource tags, and the torch device the step runs on.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class GpuSpec:
    """`count` GPUs of at least `min_memory_gb` each, of `kind` (e.g. "nvidia-h100"; "" = any)."""

    count: int = 1
    min_memory_gb: float = 0.0
    kind: str = ""

    def __post_init__(self) -> None:
        if self.count < 0:
            raise ValueError(f"GpuSpec.count must be >= 0, got {self.count}")

    @property
    def pool(self) -> str:
        """The Dagster concurrency pool: all steps of one GPU kind share it, so they never oversubscribe."""
        return f"gpu-{self.kind or 'any'}"

    def k8s_tags(self, cpu: str = "4", memory: str = "32Gi") -> dict[str, Any]:
        """The `dagster-k8s/config` tag requesting these GPUs from Kubernetes."""
        resources: dict[str, dict[str, str]] = {"requests": {"cpu": cpu, "memory": memory}, "limits": {}}
        if self.count:
            resources["requests"]["nvidia.com/gpu"] = str(self.count)
            resources["limits"]["nvidia.com/gpu"] = str(self.count)
        pod_spec: dict[str, Any] = {}
        if self.kind:
            pod_spec["node_selector"] = {"nvidia.com/gpu.product": self.kind}
        return {
            "dagster-k8s/config": {
                "container_config": {"resources": resources},
                "pod_spec_config": pod_spec,
            }
        }


def cuda_available() -> bool:
    """Whether torch sees a CUDA GPU (False when torch is missing or the driver is broken)."""
    try:
        import torch  # heavy, and optional for code that only builds tags and pools

        return bool(torch.cuda.is_available())
    except Exception:  # torch missing or broken driver: CPU it is
        return False


def deepspeed_accelerator_from_torch() -> None:
    """Tell DeepSpeed there is no GPU (`DS_ACCELERATOR=cpu`) where torch sees none and nothing chose yet.

    transformers' `save_pretrained` imports DeepSpeed wherever it is installed (accelerate's model unwrapping
    asks for `DeepSpeedEngine`), and DeepSpeed's auto-detection then warns "Setting accelerator to CPU. If you
    have GPU or other accelerator, we were unable to detect it." on every CPU turn. The same value its
    auto-detection would pick, said up front; a GPU machine or a value the user set is left alone."""
    if "DS_ACCELERATOR" not in os.environ and not cuda_available():
        os.environ["DS_ACCELERATOR"] = "cpu"


def resolve_device(spec: GpuSpec | None, prefer: str = "auto") -> str:
    """The torch device for a step: "cuda" when asked for GPUs and one exists, else "cpu"."""
    if prefer not in ("auto", "cpu", "cuda"):
        raise ValueError(f"device must be auto, cpu or cuda, got {prefer!r}")
    if prefer == "cpu" or spec is None or spec.count == 0:
        return "cpu"
    if cuda_available():
        return "cuda"
    if prefer == "cuda":
        raise RuntimeError("device 'cuda' requested but torch sees no CUDA GPU")
    return "cpu"
