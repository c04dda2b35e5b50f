"""Training telemetry on a real MLflow SQLite store: the experiment's description, the run's UI link, and
metric keys that put reward and pass rate first in the MLflow UI."""

from __future__ import annotations

from flywheel.tracking import NOTE_TAG
from flywheel.train.common.telemetry import Telemetry, mlflow_key

MODEL_METRICS = "Model metrics"


def ui_chart_sections(keys: list[str]) -> list[str]:
    """The MLflow 3 UI's chart sections in display order (runs-charts `getBaseChartAndSectionConfigs`): a key's
    section is its prefix before the last `/`, sections sort alphabetically, keys without `/` come last."""
    sections = {k.rsplit("/", 1)[0] if "/" in k else MODEL_METRICS for k in keys}
    named = sorted(s for s in sections if s != MODEL_METRICS)
    assert named == sorted(named, key=str.lower)  # the same order under the UI's localeCompare re-sort
    return named + ([MODEL_METRICS] if MODEL_METRICS in sections else [])


TRAINER_METRICS = ["reward/mean", "reward/std", "pass_rate", "reward_mean/math", "reward_std/math", "pass_rate/math",
                   "response_length", "groups/kept", "time/step_s", "loss", "entropy", "advantage/abs_mean",
                   "lr/horizon", "dev/score", "final/idle/update_waiting_for_rollouts", "n_tasks/replay",
                   "idle/rollouts_waiting_for_update", "update/tokens", "pass@k"]


def test_reward_and_pass_rate_chart_first():
    keys = [mlflow_key(k) for k in TRAINER_METRICS]
    assert ui_chart_sections(keys)[:2] == ["1_reward", "2_pass_rate"]
    assert ui_chart_sections(TRAINER_METRICS)[0] == "advantage"  # what the trainer's own names would show first
    assert (mlflow_key("reward/mean"), mlflow_key("reward_mean/code"), mlflow_key("pass_rate/code")) == \
        ("1_reward/mean", "1_reward/mean_code", "2_pass_rate/mean_code")
    assert sorted(k for k in keys if k.startswith("1_reward/"))[0] == "1_reward/mean"  # overall before domains
    assert (mlflow_key("loss"), mlflow_key("pass@k"), mlflow_key("groups/kept")) == ("loss", "pass_at_k", "groups/kept")


def test_run_is_logged_with_headline_keys_a_described_experiment_and_a_ui_link(flywheel_home, seed_mlflow_db):
    from mlflow import MlflowClient

    seed_mlflow_db(flywheel_home)
    tele = Telemetry(flywheel_home.mlflow_uri, artifact_root=flywheel_home.mlflow_artifacts, ui_url="http://ui:5000/")
    run_id = tele.start("rlvr-tiny", {"steps": 1})
    tele.log_metrics(0, {"reward/mean": 0.5, "pass_rate": 0.25, "loss": 1.0, "entropy": float("nan")})
    tele.finish()
    client = MlflowClient(flywheel_home.mlflow_uri)
    run = client.get_run(run_id)
    assert run.data.metrics == {"1_reward/mean": 0.5, "2_pass_rate/mean": 0.25, "loss": 1.0}  # NaN skipped
    assert "Training runs" in client.get_experiment(run.info.experiment_id).tags[NOTE_TAG]
    assert tele.run_url() == f"http://ui:5000/#/experiments/{run.info.experiment_id}/runs/{run_id}"
    assert Telemetry(None, enabled=False).run_url() is None
