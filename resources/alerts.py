"""Where alerts go and when the champion is rolled back: the alert webhook and the rollback rule.

`AlertResource.webhook_url` is a team's Slack-compatible incoming webhook (Slack, Mattermost, a Teams or
Discord Slack-compatible endpoint, any HTTP receiver), read from the environment (`FLYWHEEL_ALERT_WEBHOOK`,
a `dg.EnvVar`) so the secret URL is never in a file or a logged param; without one, alerts are only written
to the alert log (`alerts/alerts.jsonl` under the storage home). `RollbackResource` holds the rollback
sensor's `RollbackConfig` (defaults and help from the library dataclass).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import dagster as dg
from pydantic import Field

from flywheel.monitoring.alerts import Alert, AlertLog, Delivery
from flywheel.monitoring.sequential import RollbackConfig
from flywheel.monitoring.webhook import post_alert
from flywheel.tracking import DEFAULT_DAGSTER_UI_URL

WEBHOOK_ENV = "FLYWHEEL_ALERT_WEBHOOK"


def _lib(name: str) -> dict[str, Any]:
    """`RollbackConfig.<name>`'s default, help and range, as pydantic Field arguments: declared once, there."""
    f = next(f for f in dataclasses.fields(RollbackConfig) if f.name == name)
    out: dict[str, Any] = {"default": f.default, "description": f.metadata["help"]}
    rng = f.metadata.get("range")
    if rng is not None and rng.low is not None:
        out["gt" if rng.strict_low else "ge"] = rng.low
    if rng is not None and rng.high is not None:
        out["le"] = rng.high
    return out


class AlertResource(dg.ConfigurableResource):
    """Delivery of alerts: the webhook (empty: the alert log only), its time limits, and the UI links point to."""

    webhook_url: str = Field(default="", description=f"Slack-compatible incoming webhook; set it from the "
                                                     f"environment: dg.EnvVar('{WEBHOOK_ENV}'). Empty: log only.")
    timeout_s: float = Field(default=5.0, gt=0, description="seconds one POST may take")
    retries: int = Field(default=3, ge=0, description="retries after a connection error, 429 or 5xx")
    dagster_url: str = Field(default=DEFAULT_DAGSTER_UI_URL, description="Dagster UI base URL alerts link to")

    def deliver(self, alert: Alert, home: str | Path) -> Delivery | None:
        """Send `alert` once per incident (None: delivered before) and log it under `home`."""
        send = (lambda a: post_alert(self.webhook_url, a, timeout_s=self.timeout_s, retries=self.retries)
                ) if self.webhook_url else None
        return AlertLog.under(home).deliver_once(alert, send)

    def run_link(self, run_id: str) -> str:
        return f"{self.dagster_url.rstrip('/')}/runs/{run_id}" if self.dagster_url else ""


class RollbackResource(dg.ConfigurableResource):
    """The rollback sensor's rule (`.to_lib()` -> `RollbackConfig`)."""

    alpha: float = Field(**_lib("alpha"))
    margin: float = Field(**_lib("margin"))
    min_records: int = Field(**_lib("min_records"))
    baseline: str = Field(**_lib("baseline"))
    baseline_days: int = Field(**_lib("baseline_days"))

    def to_lib(self) -> RollbackConfig:
        return RollbackConfig(alpha=self.alpha, margin=self.margin, min_records=self.min_records,
                              baseline=self.baseline, baseline_days=self.baseline_days)


def default_resources() -> dict[str, Any]:
    """The webhook from `$FLYWHEEL_ALERT_WEBHOOK` when set (kept an `EnvVar`, never a config value)."""
    url = dg.EnvVar(WEBHOOK_ENV) if os.environ.get(WEBHOOK_ENV) else ""
    return {"alerts": AlertResource(webhook_url=url), "rollback_rule": RollbackResource()}
