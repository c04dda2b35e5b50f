"""GpuResource: places accelerator work and tells Dagster what it needs."""

from __future__ import annotations

import json
from typing import Any

import dagster as dg

from flywheel.gpu import GpuSpec, resolve_device


class GpuResource(dg.ConfigurableResource):
    """`device`: "auto" uses CUDA where present, else CPU; "cpu" forces CPU (the embedded default).

    What a step needs (count, memory, GPU kind) is its asset's `GpuSpec`, fixed where the asset
    is defined (it becomes the concurrency pool and the k8s request); this resource only says
    whether that step may use the GPU it finds.
    """

    device: str = "auto"

    def torch_device(self, spec: GpuSpec) -> str:
        """The torch device a step declaring `spec` runs on."""
        return resolve_device(spec, self.device)


def gpu_op_tags(spec: GpuSpec) -> dict[str, Any]:
    """Tags for an asset that uses `spec`: its k8s resource request (as the JSON dagster-k8s reads)."""
    return {k: json.dumps(v) for k, v in spec.k8s_tags().items()}
