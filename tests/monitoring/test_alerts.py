"""The alert log keeps one delivery per incident; the webhook gets Slack-compatible JSON, retried on 5xx."""

from __future__ import annotations

import socket
import threading

from flywheel.monitoring.alerts import Alert, AlertLog
from flywheel.monitoring.webhook import post_alert


def _alert(key: str = "check:rlvr_policy:tiny:entropy_collapse:run1") -> Alert:
    return Alert(key, "ERROR", "entropy collapsed", "entropy 0.001 nats", "asset_check")


def test_an_incident_is_delivered_once_however_often_it_is_seen(tmp_path, webhook):
    log = AlertLog.under(tmp_path)
    send = lambda a: post_alert(webhook.url, a, backoff_s=0.01)  # noqa: E731
    first = log.deliver_once(_alert(), send)
    assert first is not None and first.ok and first.attempts == 1
    assert log.deliver_once(_alert(), send) is None  # a retry of the same run: same incident
    assert log.deliver_once(_alert("check:other"), send).ok
    assert [r["incident"] for r in webhook.received] == ["check:rlvr_policy:tiny:entropy_collapse:run1", "check:other"]
    payload = webhook.received[0]["json"]
    assert payload["text"].startswith(":red_circle: [ERROR] entropy collapsed")
    assert payload["blocks"][0]["type"] == "header"
    assert [e["key"] for e in log.entries()] == ["check:rlvr_policy:tiny:entropy_collapse:run1", "check:other"]


def test_a_server_error_is_retried_and_a_failed_delivery_is_tried_again_later(tmp_path, webhook):
    log = AlertLog.under(tmp_path)
    webhook.fail_next = 2
    d = log.deliver_once(_alert(), lambda a: post_alert(webhook.url, a, retries=3, backoff_s=0.01))
    assert d.ok and d.attempts == 3 and len(webhook.received) == 1
    webhook.fail_next = 5
    d = log.deliver_once(_alert("k2"), lambda a: post_alert(webhook.url, a, retries=1, backoff_s=0.01))
    assert not d.ok and d.attempts == 2 and d.status == 503
    d = log.deliver_once(_alert("k2"), lambda a: post_alert(webhook.url, a, retries=5, backoff_s=0.01))
    assert d.ok  # not delivered before, so the next sighting sends it
    assert [r["incident"] for r in webhook.received] == [_alert().key, "k2"]


def test_a_wrong_path_fails_fast_and_an_unreachable_server_after_its_retries(webhook):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    d = post_alert(f"http://127.0.0.1:{port}/hook", _alert(), retries=1, backoff_s=0.01, timeout_s=1)
    assert not d.ok and d.attempts == 2 and "refused" in d.error.lower()
    d = post_alert(webhook.url + "-wrong", _alert(), retries=3, backoff_s=0.01)
    assert not d.ok and d.attempts == 1 and d.status == 404 and not webhook.received


def test_two_senders_racing_on_one_incident_send_it_once(tmp_path, webhook):
    log = AlertLog.under(tmp_path)
    threads = [threading.Thread(target=log.deliver_once, args=(_alert(), lambda a: post_alert(webhook.url, a)))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(webhook.received) == 1


def test_without_a_webhook_the_alert_is_only_logged(tmp_path):
    log = AlertLog.under(tmp_path)
    assert log.deliver_once(_alert(), None).ok
    assert log.delivered(_alert().key) and log.deliver_once(_alert(), None) is None
