"""A production day: written once (real logs win), the simulated model before any champion, deterministic."""

from __future__ import annotations

from pathlib import Path

import pytest

from flywheel.paths import FlywheelPaths
from flywheel.serving.production import ProductionConfig, logs_exist, serve_production_day


def _bytes(folder) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_simulated_day_is_written_once_and_is_deterministic(flywheel_home, seed_mlflow_db, tmp_path, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    seed_mlflow_db(flywheel_home)  # a registry without a champion
    cfg = ProductionConfig(records=40, seed=3)
    day = serve_production_day("2026-12-05", flywheel_home, cfg)
    assert day.written and day.served_by == "simulated-prod" and 0 < day.records <= 40 <= day.lines + 1
    folder = flywheel_home.raw_logs / "2026-12-05"
    assert day.location == str(folder) and logs_exist(day.location)
    assert not [p for p in flywheel_home.raw_logs.iterdir() if p.name.startswith(".")]  # no staging folder left
    first = _bytes(folder)

    again = serve_production_day("2026-12-05", flywheel_home, ProductionConfig(records=40, seed=99))
    assert not again.written and again.served_by == "" and "not overwritten" in again.reason
    assert _bytes(folder) == first  # existing logs win, even with another seed

    twin = FlywheelPaths(home=tmp_path / "twin", tracking_uri=flywheel_home.mlflow_uri)  # same (empty) registry
    twin_day = serve_production_day("2026-12-05", twin, cfg)
    assert twin_day.written and _bytes(Path(twin_day.location)) == first  # same inputs, same logs


def test_user_logs_are_never_written(flywheel_home, tmp_path):
    user = tmp_path / "bucket" / "2026-12-06"
    day = serve_production_day("2026-12-06", flywheel_home, user_logs=str(user))
    assert not day.written and "not found" in day.reason and not user.exists()
    assert not (flywheel_home.raw_logs / "2026-12-06").exists()
    user.mkdir(parents=True)
    (user / "real.jsonl").write_text('{"id": "r1"}\n')
    day = serve_production_day("2026-12-06", flywheel_home, user_logs=str(user))
    assert not day.written and "found" in day.reason and (user / "real.jsonl").read_text() == '{"id": "r1"}\n'


def test_a_folder_without_log_files_is_filled(flywheel_home, seed_mlflow_db, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    seed_mlflow_db(flywheel_home)
    folder = flywheel_home.raw_logs / "2026-12-07"
    folder.mkdir(parents=True)
    (folder / "README.txt").write_text("logs land here")  # not a log file: the day is still empty
    assert not logs_exist(str(folder))
    day = serve_production_day("2026-12-07", flywheel_home, ProductionConfig(records=10))
    assert day.written and (folder / "README.txt").exists() and logs_exist(str(folder))


def test_config_is_checked():
    with pytest.raises(ValueError, match="records must be >= 1"):
        ProductionConfig(records=0)
