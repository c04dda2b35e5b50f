"""Where a training stage's update runs: the backend, its ZeRO stage, the device.

Declared once here; each stage's config (`TrainConfig`, `RftConfig`) carries the same three fields
through `placement_option`, so `--backend deepspeed` reaches RFT's fine-tuning and GRPO's update
alike, and the CLI, the Dagster config and MLflow see flat fields. Light to import (no torch).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from flywheel.config_fields import check_choices, option

BACKENDS = ("torch", "deepspeed")
"""The update backends `flywheel.train.common.backend.make_backend` builds."""
DEVICES = ("auto", "cpu", "cuda")
"""What a config may ask for (`auto` resolves to `cpu` or `cuda`, `flywheel.gpu.resolve_device`)."""


@dataclass(frozen=True)
class Placement:
    """Backend, ZeRO stage and device of one update; a backend is built with the device resolved
    (`placement_of(cfg, device)`), never `auto`."""

    backend: str = option("torch", "Update backend: torch | deepspeed (both stages, RFT and GRPO).", choices=BACKENDS)
    zero_stage: int = option(0, "DeepSpeed ZeRO stage (0-3) for the deepspeed backend.", choices=(0, 1, 2, 3))
    device: str = option("auto", "auto (a GPU when there is one) | cpu | cuda (what flywheel.gpu.resolve_device "
                                 "accepts).", choices=DEVICES)

    def __post_init__(self) -> None:
        check_choices(self)

    def replace(self, **changes: Any) -> Placement:
        return dataclasses.replace(self, **changes)


PLACEMENT_FIELDS = tuple(f.name for f in dataclasses.fields(Placement))
"""The fields a stage's config takes from `Placement` (and the resources decide)."""


def placement_option(name: str) -> Any:
    """A stage config's field `name` with `Placement`'s default, help and choices (declared once, above)."""
    f = Placement.__dataclass_fields__[name]
    return option(f.default, f.metadata["help"], choices=f.metadata.get("choices"))


def placement_of(cfg: Any, device: str | None = None) -> Placement:
    """The placement a stage config holds (`device`: the resolved device, replacing `auto`)."""
    return Placement(**{n: getattr(cfg, n) for n in PLACEMENT_FIELDS}).replace(device=device or cfg.device)
