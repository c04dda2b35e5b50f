"""Two consecutive flywheel turns, end to end, on the embedded defaults at tiny sizes.

The real thing all the way through: simulated production traffic, ingest into DuckDB, mining,
verifier construction in the sandbox, the tiny model, GRPO, evaluation with the verifiers,
the MLflow registry, and the Dagster jobs on a persistent SQLite instance. The second turn's
traffic is served by the first turn's champion, and its logs are what the second turn mines.
"""

from __future__ import annotations

import duckdb
import pytest

TINY = {
    "verifiers": {"max_tasks": 24},
    "rlvr_policy": {"stage": "rl", "steps": 2, "prompts_per_step": 4, "group_size": 4, "max_new_tokens": 24,
                    "checkpoint_every": 0},  # GRPO end to end (the RFT stage: tests/train/test_stages.py)
    "eval_report": {"n_samples": 1, "tasks_math": 4, "tasks_code": 2, "tasks_agent": 2, "max_new_tokens": 48,
                    "max_steps": 3},
}


def test_two_consecutive_turns(turn_env):
    from flywheel.registry.mlflow_registry import DEFAULT_MODEL_NAME, Registry
    from flywheel_dagster.assets.turn import run_turn
    from flywheel_dagster.assets.turn_config import TurnConfig

    cfg = TurnConfig(day="2026-12-01", base_model="tiny-quick", records=300, train_budget_s=0, overrides=TINY)
    first = run_turn(cfg, progress=lambda _: None)

    assert first["day"] == "2026-12-01" and first["traffic_served_by"] == "simulated-prod"
    for side in ("eval_before", "eval_after"):
        assert {"math", "code", "agent", "overall"} <= set(first[side])
        assert all(0.0 <= v <= 1.0 for v in first[side].values())
    assert isinstance(first["promoted"], bool) and first["reason"]
    assert first["ingest"]["ingested"] > 0 and first["task_pool"] > 0
    data = first["data"]  # the data side, in the summary the CLI prints
    assert data["logs_from"] == "served by simulated-prod" and data["ingested"] == first["ingest"]["ingested"]
    assert data["lines_read"] >= data["ingested"] and sum(data["pool_by_domain"].values()) == first["task_pool"]
    assert all(c["severity"] in ("ERROR", "WARN") for c in first["checks_failed"])
    registry = Registry(turn_env.mlflow_uri, DEFAULT_MODEL_NAME)
    champion = registry.champion()
    assert champion is not None and first["champion_after"] == champion.uri
    _assert_lineage(registry, "2026-12-01")

    second = run_turn(TurnConfig(base_model="tiny-quick", records=120, train_budget_s=0, overrides=TINY),
                      progress=lambda _: None)
    assert second["day"] == "2026-12-02"  # consecutive turns are consecutive days
    assert second["traffic_served_by"] == champion.uri  # yesterday's champion served today's traffic
    con = duckdb.connect(str(turn_env.warehouse), read_only=True)
    try:
        models = dict(con.execute(
            "SELECT CAST(log_date AS VARCHAR), string_agg(DISTINCT model, ',') FROM task_logs GROUP BY 1").fetchall())
    finally:
        con.close()
    assert models["2026-12-01"] == "simulated-prod:v1"
    assert models["2026-12-02"] == second["traffic_served_by"]  # the champion's own traffic was mined
    assert "simulated" not in models["2026-12-02"]
    _assert_lineage(registry, "2026-12-02")


def _assert_lineage(registry, day: str) -> None:
    """The newest candidate version carries the log partitions its task pool came from (today's among them)
    and its MLflow run is the `rlvr_policy` training run."""
    import json

    cand = [v for v in registry.versions() if not v.is_base][-1]
    assert day in json.loads(cand.tags["flywheel.log_partitions"])
    mv = registry.client.get_model_version(registry.name, cand.version)
    assert mv.run_id == cand.tags["flywheel.training_run_id"]
    assert registry.client.get_run(mv.run_id).info.run_name == "rlvr-tiny-quick"


def test_a_turn_day_must_be_a_log_partition(tmp_path, monkeypatch, capsys):
    """A future day (the default after today's turn) or a non-date is a clear error, before any traffic."""
    from datetime import datetime, timedelta, timezone

    from flywheel.cli import main
    from flywheel_dagster.assets.turn import check_turn_day

    today = datetime.now(timezone.utc).date()
    check_turn_day(today.isoformat())
    with pytest.raises(ValueError, match="after today"):
        check_turn_day((today + timedelta(days=1)).isoformat())
    with pytest.raises(ValueError, match="before the first log partition"):
        check_turn_day("2020-01-01")
    monkeypatch.setenv("FLYWHEEL_HOME", str(tmp_path / "home"))
    assert main(["turn", "--day", "2026-02-30"]) == 2
    assert "is not a date" in capsys.readouterr().err
    assert not (tmp_path / "home" / "raw_logs").exists() or not any((tmp_path / "home" / "raw_logs").iterdir())


def test_turns_are_consecutive_days_all_checked_before_any_runs():
    from datetime import datetime, timedelta, timezone

    from flywheel_dagster.assets.turn import TurnDayError, turn_days

    assert turn_days("2026-11-29", 3) == ["2026-11-29", "2026-11-30", "2026-12-01"]
    today = datetime.now(timezone.utc).date()
    with pytest.raises(TurnDayError, match="after today"):  # the last of the run would be tomorrow
        turn_days((today - timedelta(days=1)).isoformat(), 3)
    with pytest.raises(TurnDayError, match="not a date"):
        turn_days("yesterday", 2)
    with pytest.raises(TurnDayError, match=">= 1"):
        turn_days("2026-11-29", 0)


def test_a_fresh_home_starts_early_enough_for_three_single_turns(tmp_path):
    from datetime import datetime, timedelta, timezone

    from flywheel.paths import FlywheelPaths
    from flywheel_dagster.assets.turn import FRESH_HOME_DAYS, first_day, next_day

    paths = FlywheelPaths(home=tmp_path / "home").ensure()
    today = datetime.now(timezone.utc).date()
    start = first_day(paths, 1)  # `make flywheel` on a fresh clone
    assert start == (today - timedelta(days=FRESH_HOME_DAYS - 1)).isoformat()
    assert first_day(paths, 5) == (today - timedelta(days=4)).isoformat()  # --turns 5 ends today
    (paths.raw_logs / start).mkdir(parents=True)
    assert first_day(paths, 1) == next_day(paths) == (today - timedelta(days=FRESH_HOME_DAYS - 2)).isoformat()


def _team_line(i: int, day: str, model: str) -> str:
    import json

    a, b = 17 + i, 5 + i % 9
    return json.dumps({"id": f"{model}-{i}", "timestamp": f"{day}T08:{i % 60:02d}:00Z", "task_id": f"team-{i}",
                       "domain": "math", "model": model,
                       "messages": [{"role": "user", "content": f"What is {a} + {b}?"},
                                    {"role": "assistant", "content": f"Answer: {a + b + 1}"}],
                       "outcome": {"status": "failure", "passed": False}, "reference": {"answer": str(a + b)}})


def test_your_logs_drive_a_turn_as_the_readme_says(turn_env, capsys):
    """README "Your logs → a turn", way 1: files dropped into the home's raw-log folder for a day, then
    `flywheel turn --day DAY`: nothing is served, the team's model's failures are mined, the summary says so."""
    import json

    from flywheel.cli import main

    day = "2026-12-01"
    folder = turn_env.raw_logs / day
    folder.mkdir(parents=True)
    (folder / "team.jsonl").write_text("\n".join(_team_line(i, day, "team-model:v3") for i in range(60)) + "\n")
    sets = [f"{asset}.{k}={json.dumps(v)}" for asset, fields in TINY.items() for k, v in fields.items()]
    argv = ["turn", "--day", day, "--base-model", "tiny-quick", "--train-budget-s", "0", "--json"]
    code = main(argv + [x for s in sets for x in ("--set", s)])
    out = json.loads(capsys.readouterr().out)
    assert code == 0, out
    data = out["data"]
    assert data["logs_from"].startswith("your logs") and out["traffic_served_by"].startswith("none")
    assert (data["lines_read"], data["ingested"], data["quarantined"]) == (60, 60, 0)
    assert data["pool_model"] == "team-model:v3" and data["pool_by_domain"].get("math", 0) > 0
    # links built when the turn is shown, both ways: MLflow's runs, and each MLflow run back to its Dagster run
    from mlflow import MlflowClient

    links = out["links"]
    assert links["dagster_model_run"] == f"http://127.0.0.1:3000/runs/{out['dagster_runs'][1]}"
    for key in ("mlflow_training_run", "mlflow_eval_run"):
        assert links[key].startswith("http://127.0.0.1:5000/#/experiments/")
        tags = MlflowClient(turn_env.mlflow_uri).get_run(links[key].rsplit("/", 1)[-1]).data.tags
        assert tags["flywheel.dagster_run_id"] == out["dagster_runs"][1]
        assert f"(http://127.0.0.1:3000/runs/{out['dagster_runs'][1]})" in tags["mlflow.note.content"]
    assert not [c for c in out["checks_failed"] if c["severity"] == "ERROR" and c["asset"] in
                ("task_logs", "task_pool")]


def test_a_default_turn_logs_rft_curves(turn_env):
    """The default stage (RFT) at tiny sizes through a whole turn: its MLflow run shows per-step curves, fine-tuning
    and sampling round, charted first (issue 27: 15 of 16 charts were a single dot at the last step)."""
    import json

    from mlflow import MlflowClient

    from flywheel_dagster.assets.turn import run_turn
    from flywheel_dagster.assets.turn_config import TurnConfig

    day = "2026-12-01"
    folder = turn_env.raw_logs / day
    folder.mkdir(parents=True)
    lines = [_team_line(i, day, "team-model:v3") for i in range(40)]
    for i in range(40):  # the same tasks answered right once: logged successes RFT re-verifies and keeps
        rec = json.loads(_team_line(i, day, "team-model:v3"))
        a, b = 17 + i, 5 + i % 9
        rec.update(id=f"ok-{i}", outcome={"status": "success", "passed": True},
                   messages=[rec["messages"][0], {"role": "assistant", "content": f"Answer: {a + b}"}])
        lines.append(json.dumps(rec))
    (folder / "team.jsonl").write_text("\n".join(lines) + "\n")
    rft = {"rft_tasks_per_domain": {"math": 40}, "rft_samples_per_task": 1, "rft_max_new_tokens": 24,
           "rft_steps": 4, "rft_batch_size": 2, "rft_include_logs": True}
    sets = {**TINY, "rlvr_policy": rft}
    summary = run_turn(TurnConfig(day=day, base_model="tiny-quick", train_budget_s=0, overrides=sets),
                       progress=lambda _: None)
    run_id = summary["links"]["mlflow_training_run"].rsplit("/", 1)[-1]
    client = MlflowClient(turn_env.mlflow_uri)
    run = client.get_run(run_id)
    assert run.data.tags["flywheel.stage"] == "rft"
    hist = {k: client.get_metric_history(run_id, k) for k in run.data.metrics}
    assert [m.step for m in hist["1_rft/loss"]] == [1, 2, 3, 4] and len(hist["1_rft/lr"]) == 4
    assert len(hist["2_pass_rate/kept_share"]) > 5 and hist["rft/examples"][-1].value > 0
    assert sorted({k.rsplit("/", 1)[0] for k in hist})[:2] == ["1_rft", "2_pass_rate"]
