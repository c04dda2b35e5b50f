"""What one `flywheel turn` does, declared once: the CLI's flags are generated from these fields.

No Dagster import here: the CLI builds its parser from this module at start-up.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from flywheel.config_fields import check_choices, option
from flywheel.defaults import DEFAULT_BASE_MODEL


@dataclass(frozen=True)
class TurnConfig:
    """Which day a turn writes and ingests, for which base model, how much traffic, what stops it."""

    day: str | None = None  # default: the day after the newest raw-log partition, else today (UTC)
    base_model: str = option(DEFAULT_BASE_MODEL, "base-model partition (release name or checkpoint)")
    records: int = option(0, "production requests the champion serves for the day (0: the production_traffic "
                             "asset's own default); ignored on a day whose logs are yours", ge=0)
    seed: int = option(0, "seed of the day's simulated traffic", ge=0)
    train_budget_s: float = option(180.0, "cap in CPU-seconds of the training run inside the turn (0: no cap); "
                                          "CPU time, not wall time, so a shared machine trains the same steps",
                                   ge=0)
    stop_on_failed_checks: bool = option(True, "stop before training when an ERROR-severity check of the data "
                                               "side fails (quarantine rate, pool coverage, ...); "
                                               "--no-stop-on-failed-checks trains anyway")
    overrides: dict[str, dict[str, Any]] = field(default_factory=dict)  # asset -> config fields, e.g. sizes

    def __post_init__(self) -> None:
        check_choices(self)
