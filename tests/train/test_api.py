"""`train_policy` chains the stages TrainConfig.stage names; RFT is a tracked run like GRPO."""

from __future__ import annotations

import datetime as dt

import duckdb
import mlflow
import pytest

from flywheel.tasks.suites import train_suite
from flywheel.train.api import day_seed, train_policy
from flywheel.train.common.difficulty import training_model_name
from flywheel.train.config import TrainConfig
from flywheel.train.rft.config import RftConfig

RFT = RftConfig(tasks_per_domain={"math": 6}, samples_per_task=4, max_new_tokens=48, steps=2, batch_size=4,
                include_logs=True)


def _rl(stage: str) -> TrainConfig:
    return TrainConfig(stage=stage, steps=1, prompts_per_step=2, group_size=2, max_new_tokens=24, dev_every=0,
                      domain_weights={"math": 1.0}, replay_tasks_per_domain=0, checkpoint_every=0)


def test_rft_stage_saves_the_policy_and_logs_an_mlflow_run(tiny_model_dir, flywheel_home, seed_mlflow_db, log_gold):
    seed_mlflow_db(flywheel_home)
    log_gold(flywheel_home, train_suite("math", 6))
    res = train_policy(_rl("rft"), tiny_model_dir, "tiny-quick", paths=flywheel_home,
                       tasks=train_suite("math", 6), rft=RFT)
    assert res.finished and (res.policy_dir / "config.json").exists()
    assert res.policy_dir == flywheel_home.models / "policies" / "tiny-quick"
    assert res.steps_done == 2 and 0.0 < res.history[-1]["reward/mean"] <= 1.0
    run = mlflow.MlflowClient(flywheel_home.mlflow_uri).get_run(res.mlflow_run_id)
    assert run.data.tags["flywheel.stage"] == "rft" and "rft/examples" in run.data.metrics
    assert 0.0 <= run.data.metrics["2_pass_rate/mean"] <= 1.0 and "2_pass_rate/mean_math" in run.data.metrics
    # curves, not dots: the fine-tuning per step and the sampling round as it was judged, charted first
    client = mlflow.MlflowClient(flywheel_home.mlflow_uri)
    hist = {k: client.get_metric_history(run.info.run_id, k) for k in run.data.metrics}
    assert [m.step for m in hist["1_rft/loss"]] == [1, 2] and len(hist["1_rft/lr"]) == 2
    assert len(hist["2_pass_rate/mean"]) > 5 and len(hist["2_pass_rate/kept_share"]) > 5
    assert hist["rft/examples"][-1].value == res.sources["rft/examples"]
    assert sorted({k.rsplit("/", 1)[0] for k in hist})[:2] == ["1_rft", "2_pass_rate"]
    assert sum(len(h) > 1 for h in hist.values()) >= len(hist) - 3  # rft/tasks, final/wall_s: one value each
    from flywheel.monitoring.sources import run_history  # what the training checks judge, as GRPO's

    finished = [h["samples/finished_share"] for h in run_history(flywheel_home.mlflow_uri, run.info.run_id)
                if "samples/finished_share" in h]
    assert len(finished) > 5 and all(0.0 <= f <= 1.0 for f in finished)
    assert res.sources["rft/examples"] >= 6 and res.sources["rft/log_passed"] >= 6
    # the policy's own samples are written back: 4 attempts per task, passes among them
    assert set(res.task_counts) == {t.task_id for t in train_suite("math", 6)}
    assert all(d == "math" and a == 4 and 0 <= p <= 4 for d, a, p in res.task_counts.values())
    assert res.difficulty_rows == 6
    con = duckdb.connect(str(flywheel_home.warehouse), read_only=True)
    rows = con.execute("SELECT task_id, attempts, passes FROM difficulty_history WHERE model = ?",
                       [training_model_name("tiny-quick")]).fetchall()
    con.close()
    assert {r[0]: (r[1], r[2]) for r in rows} == {t: (a, p) for t, (_, a, p) in res.task_counts.items()}


def test_rft_rl_starts_grpo_from_the_rft_weights(tiny_model_dir, flywheel_home, seed_mlflow_db, log_gold):
    seed_mlflow_db(flywheel_home)
    log_gold(flywheel_home, train_suite("math", 6))
    res = train_policy(_rl("rft_rl"), tiny_model_dir, "tiny-quick", paths=flywheel_home,
                       tasks=train_suite("math", 6), rft=RFT)
    assert res.steps_done == 1 and (flywheel_home.models / "rft" / "tiny-quick" / "config.json").exists()
    run = mlflow.MlflowClient(flywheel_home.mlflow_uri).get_run(res.mlflow_run_id)
    assert run.data.params["manifest.base_model"] == str(flywheel_home.models / "rft" / "tiny-quick")


def test_unknown_stage_is_refused():
    with pytest.raises(ValueError, match="stage"):
        TrainConfig(stage="ppo")


def test_each_day_gets_its_own_rft_seed_and_a_rerun_of_a_day_the_same():
    assert day_seed(0, None) == 0 and day_seed(5, None) == 5  # no day: the configured seed as given
    days = [day_seed(0, f"2026-12-0{i}") for i in range(1, 4)]
    assert len(set(days)) == 3 and all(0 <= s < 2**31 for s in days)
    assert day_seed(0, "2026-12-01") == days[0] == day_seed(0, dt.date(2026, 12, 1))
    assert day_seed(1, "2026-12-01") != days[0]
