"""`flywheel rollback`: back to the previous champion, or to a named version; an unknown version or model
name is a usage error that changes nothing in the registry."""

from __future__ import annotations

import json


def test_rollback_cli_json(mlflow_registry, flywheel_home, tmp_path, capsys, monkeypatch):
    from flywheel.cli import main

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)  # the CLI falls back to $FLYWHEEL_HOME's store

    mlflow_registry.ensure_champion(tmp_path, "tiny-v1")
    mlflow_registry.set_champion(mlflow_registry.register(tmp_path, {"base_model": "tiny-v1"}).version)
    assert main(["rollback", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["from_version"] == "2" and out["to_version"] == "1" and out["champion"] == "flywheel-policy:1"
    assert main(["rollback", "--to", "2"]) == 0
    assert "flywheel-policy:2" in capsys.readouterr().out
    assert main(["rollback", "--to", "7", "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["exit_code"] == 2


def test_rollback_unknown_model_name_creates_nothing(mlflow_registry, flywheel_home, capsys, monkeypatch):
    from mlflow import MlflowClient

    from flywheel.cli import main

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    client = MlflowClient(tracking_uri=flywheel_home.mlflow_uri, registry_uri=flywheel_home.mlflow_uri)
    before = sorted(m.name for m in client.search_registered_models())
    assert before == [mlflow_registry.name]
    assert main(["rollback", "--model-name", "nosuch"]) == 2
    err = capsys.readouterr().err
    assert f"no registered model 'nosuch' in {flywheel_home.mlflow_uri} (registered: {mlflow_registry.name})" in err
    assert main(["rollback", "--model-name", "nosuch", "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["error"].startswith("no registered model 'nosuch'")
    assert sorted(m.name for m in client.search_registered_models()) == before  # nothing was created
    assert main(["rollback", "--json"]) == 1  # a real model without a previous champion: ran, nothing to undo
    assert "no previous champion" in json.loads(capsys.readouterr().out)["error"]
