"""Links into the MLflow UI (MLflow 3 hash routes) and the experiments' descriptions, on a real SQLite store."""

from __future__ import annotations

from flywheel.tracking import (
    DEFAULT_UI_URL,
    EVAL_EXPERIMENT,
    EXPERIMENT_DESCRIPTIONS,
    NOTE_TAG,
    ensure_experiment,
    experiment_url,
    mlflow_run_url,
    model_version_url,
    run_url,
    ui_base,
)


def test_url_formats():
    assert run_url("http://127.0.0.1:5000", "3", "abc123") == "http://127.0.0.1:5000/#/experiments/3/runs/abc123"
    assert run_url("https://mlflow.example/", "3", "abc") == "https://mlflow.example/#/experiments/3/runs/abc"
    assert experiment_url("http://h:5000", "7") == "http://h:5000/#/experiments/7"
    assert model_version_url("http://h:5000", "flywheel-policy", 4) == \
        "http://h:5000/#/models/flywheel-policy/versions/4"
    assert model_version_url("http://h", "my model/x", "2") == "http://h/#/models/my%20model%2Fx/versions/2"


def test_ui_base_is_configured_else_the_server_else_make_mlflow():
    assert ui_base("sqlite:////data/mlflow.db") == DEFAULT_UI_URL == "http://127.0.0.1:5000"
    assert ui_base("http://mlflow.internal:8080/") == "http://mlflow.internal:8080"
    assert ui_base("sqlite:////data/mlflow.db", "https://ui.example/") == "https://ui.example"


def test_experiments_get_descriptions_and_run_links(flywheel_home, seed_mlflow_db):
    from mlflow import MlflowClient

    seed_mlflow_db(flywheel_home)
    client = MlflowClient(flywheel_home.mlflow_uri)
    exp_id = ensure_experiment(client, EVAL_EXPERIMENT, flywheel_home.mlflow_artifacts.as_uri())
    assert client.get_experiment(exp_id).tags[NOTE_TAG] == EXPERIMENT_DESCRIPTIONS[EVAL_EXPERIMENT]
    client.set_experiment_tag(exp_id, NOTE_TAG, "edited by a person")
    assert ensure_experiment(client, EVAL_EXPERIMENT) == exp_id
    assert client.get_experiment(exp_id).tags[NOTE_TAG] == "edited by a person"  # kept
    older = client.create_experiment("flywheel-rlvr")  # made before descriptions existed
    ensure_experiment(client, "flywheel-rlvr")
    assert "Training runs" in client.get_experiment(older).tags[NOTE_TAG]
    run = client.create_run(exp_id)
    assert mlflow_run_url(flywheel_home.mlflow_uri, run.info.run_id) == \
        f"http://127.0.0.1:5000/#/experiments/{exp_id}/runs/{run.info.run_id}"
