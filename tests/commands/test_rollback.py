"""`flywheel rollback`: back to the previous champion, or to a named version; an unknown version fails."""

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
    assert main(["rollback", "--to", "7", "--json"]) != 0
