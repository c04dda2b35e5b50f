"""TrainerResource: how the policy update runs (the backend), not what it trains nor on which device."""

from __future__ import annotations

from typing import Any

import dagster as dg
from pydantic import Field


class TrainerResource(dg.ConfigurableResource):
    """Backend `torch` (default) or `deepspeed` (ZeRO `zero_stage`); the device comes from `GpuResource`."""

    backend: str = Field(default="torch", description="update backend: torch | deepspeed")
    zero_stage: int = Field(default=0, ge=0, le=3, description="DeepSpeed ZeRO stage (0-3)")
    num_threads: int = Field(default=0, ge=0, description="torch threads of the run (0 = 1 on CPU, torch's default on a GPU)")

    def placement(self, device: str) -> dict[str, Any]:
        """The GRPOConfig fields this resource decides, plus `device` (decided by `GpuResource`)."""
        return {"backend": self.backend, "zero_stage": self.zero_stage, "device": device,
                "num_threads": self.num_threads}


def default_resources() -> dict[str, Any]:
    return {"trainer": TrainerResource()}
