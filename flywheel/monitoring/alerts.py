"""Alerts: one record per incident, kept in a JSONL log under the storage home and delivered once.

Why a JSONL file and not a warehouse table: alerts are written by sensors in the Dagster daemon while a step
may hold the DuckDB file's single writer lock for minutes (ingest, mining); an alert must never wait on, or
fail for, the very pipeline it reports on. Appends are small, locked lines, readable with any tool.

An incident's `key` says what went wrong once, however often it is seen: a failed check is keyed by asset,
partition, check and the run's root (a retried run keeps its root), a failed run by its root run, a rollback
by the version it moved away from and the last day judged. `AlertLog.deliver_once` sends an incident's first
sighting and records it; later sightings of a delivered key send nothing.
"""

from __future__ import annotations

import fcntl
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ALERT_LOG = Path("alerts") / "alerts.jsonl"
"""Where the alert log lives, relative to the storage home."""


@dataclass(frozen=True)
class Alert:
    """Something a person should look at: `severity` WARN | ERROR | INFO, a one-line `title`, the `text`."""

    key: str
    severity: str
    title: str
    text: str
    source: str  # asset_check | run_failure | rollback
    link: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    at: str = field(default_factory=lambda: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))

    def slack_payload(self) -> dict[str, Any]:
        """Slack-compatible incoming-webhook JSON (`text` plus `blocks`); Mattermost and Teams' Slack
        endpoints read the same `text`."""
        icon = {"ERROR": ":red_circle:", "WARN": ":warning:"}.get(self.severity, ":information_source:")
        body = f"{self.text}\n_incident_ `{self.key}`" + (f"\n<{self.link}|open in Dagster>" if self.link else "")
        return {"text": f"{icon} [{self.severity}] {self.title}\n{self.text}",
                "blocks": [{"type": "header", "text": {"type": "plain_text", "text": f"[{self.severity}] {self.title}"[:150]}},
                           {"type": "section", "text": {"type": "mrkdwn", "text": body[:2900]}}]}


@dataclass(frozen=True)
class Delivery:
    """What sending one alert did: `ok`, how many `attempts`, the last HTTP status or error."""

    ok: bool
    attempts: int
    status: int | None = None
    error: str = ""


class AlertLog:
    """The JSONL alert log at `path` (one line per sighting worth keeping: deliveries and their failures)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    @classmethod
    def under(cls, home: str | Path) -> AlertLog:
        return cls(Path(home) / ALERT_LOG)

    def entries(self) -> Iterator[dict[str, Any]]:
        if not self.path.is_file():
            return
        with open(self.path) as f:
            for line in f:
                if line.strip():
                    yield json.loads(line)

    def delivered(self, key: str) -> bool:
        return any(e["key"] == key and e.get("delivered") for e in self.entries())

    def append(self, entry: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            f.write(json.dumps(entry, sort_keys=True, default=str) + "\n")

    def deliver_once(self, alert: Alert, send: Callable[[Alert], Delivery] | None) -> Delivery | None:
        """Send `alert` unless its incident was delivered before (None then); log the attempt either way it
        was made. With no `send` (no webhook configured) the alert is only logged, as delivered to the log."""
        with _locked(self.path):
            if self.delivered(alert.key):
                return None
            result = send(alert) if send is not None else Delivery(True, 0, error="no webhook: logged only")
            self.append({**asdict(alert), "delivered": result.ok, "attempts": result.attempts,
                         "status": result.status, "error": result.error})
            return result


class _locked:
    """An exclusive lock on `<path>.lock` for one check-then-send, so two sensors never send one incident twice."""

    def __init__(self, path: Path) -> None:
        self.lock = path.with_suffix(path.suffix + ".lock")

    def __enter__(self) -> None:
        self.lock.parent.mkdir(parents=True, exist_ok=True)
        self.f = open(self.lock, "a")
        fcntl.flock(self.f, fcntl.LOCK_EX)

    def __exit__(self, *exc: Any) -> None:
        fcntl.flock(self.f, fcntl.LOCK_UN)
        self.f.close()
