"""The flywheel's history read back from a real MLflow registry: one row per candidate, in order."""

from __future__ import annotations

from flywheel.registry.history import history_markdown, history_png, load_history, turn_history


def test_history_lists_each_turn_with_both_models_and_the_decision(mlflow_registry, flywheel_home, add_candidate, tmp_path):
    base = tmp_path / "base"
    base.mkdir()
    (base / "config.json").write_text("{}")
    mlflow_registry.register(base, {"base_model": "tiny-v1"}, role="base")
    add_candidate("c1", "2026-12-01", {"math": 0.5, "overall": 0.4}, {"math": 0.6, "overall": 0.5}, True)
    add_candidate("c2", "2026-12-02", {"math": 0.6, "overall": 0.5}, {"math": 0.55, "overall": 0.45}, False)

    records = turn_history(mlflow_registry)
    assert [r.day for r in records] == ["2026-12-01", "2026-12-02"]
    assert [r.promoted for r in records] == [True, False]
    assert records[0].before == {"math": 0.5, "overall": 0.4} and records[1].after["math"] == 0.55
    assert [r.version for r in load_history(flywheel_home.mlflow_uri)] == [r.version for r in records]

    md = history_markdown(records)
    assert "| 1 | 2026-12-01 |" in md and "0.500 → 0.600" in md and md.count("| yes |") == 1
    assert history_png(records).startswith(b"\x89PNG")


def test_empty_history_says_so(mlflow_registry):
    assert turn_history(mlflow_registry) == []
    assert "No turn" in history_markdown([])


def test_a_rollback_and_a_canary_show_in_the_history(mlflow_registry, flywheel_home, add_candidate, tmp_path):
    from flywheel.registry.deploy import rollback_champion

    base = tmp_path / "base"
    base.mkdir()
    (base / "config.json").write_text("{}")
    b = mlflow_registry.register(base, {"base_model": "tiny-v1"}, role="base")
    mlflow_registry.set_champion(b.version)
    c1 = add_candidate("c1", "2026-12-01", {"math": 0.5, "overall": 0.5}, {"math": 0.6, "overall": 0.6}, True)
    mlflow_registry.set_tags(c1.version, {"flywheel.canary": {"passed": True, "diff": 0.01, "lo": -0.03,
                                                                "hi": 0.05, "n": 300}})
    mlflow_registry.set_champion(c1.version)
    rollback_champion(flywheel_home.mlflow_uri, "live pass rate dropped: math 0.41 < promised 0.55")
    [r] = load_history(flywheel_home.mlflow_uri)
    assert r.rolled_back.startswith("live pass rate dropped") and r.canary == "passed +0.010 [-0.030, +0.050] over 300 requests"
    md = history_markdown([r])
    assert "| yes: live pass rate dropped: math 0.41 < promised 0.55 |" in md and "passed +0.010" in md
    assert history_png([r]).startswith(b"\x89PNG")
