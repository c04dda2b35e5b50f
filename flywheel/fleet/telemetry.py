"""The fleets' utilisation in the trainer's MLflow run, beside its own idle shares.

`FleetTelemetry(telemetry, stats)` is the trainer's `Telemetry` with `stats()` (each fleet's
`fleet/<name>_busy.<i>`, `idle/<name>_fleet`, restarts) added to every `log_metrics` call, so each
step and the run's `final/` figures carry them next to `idle/update_waiting_for_rollouts`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any


class FleetTelemetry:
    """Delegates to `inner` (a `flywheel.train.common.telemetry.Telemetry`); only `log_metrics` adds the fleet's figures."""

    def __init__(self, inner: Any, stats: Callable[[], Mapping[str, float]]) -> None:
        self.inner, self.stats = inner, stats

    def log_metrics(self, step: int, metrics: Mapping[str, float]) -> None:
        final = any(k.startswith("final/") for k in metrics)
        extra = {(f"final/{k}" if final else k): float(v) for k, v in self.stats().items()}
        self.inner.log_metrics(step, {**metrics, **extra})

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
