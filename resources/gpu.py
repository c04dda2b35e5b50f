"""GpuResource: places accelerator work and tells Dagster what it needs."""

from __future__ import annotations

from typing import Any

import dagster as dg

from flywheel.gpu import GpuSpec, resolve_device


class GpuResource(dg.ConfigurableResource):
    """`device`: "auto" uses CUDA where present, else CPU; "cpu" forces CPU (the embedded default)."""

    device: str = "auto"
    kind: str = ""

    def spec(self, count: int = 1, min_memory_gb: float = 0.0) -> GpuSpec:
        return GpuSpec(count=count, min_memory_gb=min_memory_gb, kind=self.kind)

    def torch_device(self, spec: GpuSpec) -> str:
        return resolve_device(spec, self.device)


def gpu_op_tags(spec: GpuSpec) -> dict[str, Any]:
    """Tags for an asset that uses `spec`: its k8s resource request (as the JSON dagster-k8s reads)."""
    import json

    return {k: json.dumps(v) for k, v in spec.k8s_tags().items()}
