"""Deliver an alert to a team's channel: a Slack-compatible incoming webhook, over `urllib`, bounded in time.

Retries only what may pass on a second try (a connection error, 429, 5xx), with growing pauses; a 4xx is a
wrong URL or payload and is reported at once. Each request carries the incident key in `X-Flywheel-Incident`
so a receiver can drop a duplicate if a retry follows a reply that was lost on the way back.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

from flywheel.monitoring.alerts import Alert, Delivery


def post_alert(url: str, alert: Alert, *, timeout_s: float = 5.0, retries: int = 3,
               backoff_s: float = 0.5) -> Delivery:
    """POST `alert.slack_payload()` to `url`: up to `retries` retries after the first attempt."""
    data = json.dumps(alert.slack_payload()).encode()
    status, error = None, ""
    for attempt in range(1, retries + 2):
        req = urllib.request.Request(url, data=data, method="POST", headers={
            "Content-Type": "application/json", "X-Flywheel-Incident": alert.key[:200]})
        try:
            with urllib.request.urlopen(req, timeout=timeout_s) as resp:
                return Delivery(True, attempt, resp.status)
        except urllib.error.HTTPError as e:
            status, error = e.code, f"HTTP {e.code}"
            if e.code != 429 and e.code < 500:
                return Delivery(False, attempt, status, error)
        except (urllib.error.URLError, TimeoutError, OSError) as e:
            status, error = None, f"{type(e).__name__}: {getattr(e, 'reason', e)}"
        if attempt <= retries:
            time.sleep(backoff_s * 2 ** (attempt - 1))
    return Delivery(False, retries + 1, status, error)
