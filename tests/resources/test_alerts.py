"""The alert and rollback resources: the webhook URL stays in the environment, the rule's ranges are the library's."""

from __future__ import annotations

import dagster as dg
import pytest

from flywheel.monitoring.alerts import Alert
from flywheel.monitoring.sequential import RollbackConfig
from flywheel_dagster.resources.alerts import WEBHOOK_ENV, AlertResource, RollbackResource, default_resources


def test_the_webhook_comes_from_the_environment_never_a_config_value(monkeypatch, tmp_path):
    monkeypatch.delenv(WEBHOOK_ENV, raising=False)
    assert default_resources()["alerts"].webhook_url == ""
    monkeypatch.setenv(WEBHOOK_ENV, "http://127.0.0.1:9/hook")
    url = default_resources()["alerts"].webhook_url
    assert isinstance(url, dg.EnvVar) and url.env_var_name == WEBHOOK_ENV
    alert_log_only = AlertResource()  # no webhook: logged, reported delivered to the log
    assert alert_log_only.deliver(Alert("k", "WARN", "t", "x", "asset_check"), tmp_path).ok
    assert (tmp_path / "alerts" / "alerts.jsonl").read_text().count('"key": "k"') == 1


def test_the_rollback_rule_is_the_library_config_with_its_ranges():
    assert RollbackResource().to_lib() == RollbackConfig()
    with pytest.raises(Exception, match="alpha"):
        RollbackResource(alpha=0.0)
    with pytest.raises(ValueError, match="baseline"):
        RollbackResource(baseline="vibes").to_lib()
