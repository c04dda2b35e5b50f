"""Links into the MLflow UI (MLflow 3 hash routes) and the experiments' descriptions, on a real SQLite store."""

from __future__ import annotations

from flywheel.tracking import (
    DAGSTER_RUN_TAG,
    DEFAULT_UI_URL,
    EVAL_EXPERIMENT,
    EXPERIMENT_DESCRIPTIONS,
    NOTE_TAG,
    ensure_experiment,
    experiment_url,
    link_dagster_run,
    mlflow_run_url,
    model_version_url,
    run_links,
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


def test_links_are_built_when_shown_from_the_configured_address(flywheel_home, seed_mlflow_db):
    """issue 27: links frozen at port 5000 broke when MLflow moved; `run_links` builds them from today's address."""
    from mlflow import MlflowClient

    seed_mlflow_db(flywheel_home)
    client = MlflowClient(flywheel_home.mlflow_uri)
    exp_id = ensure_experiment(client, EVAL_EXPERIMENT, flywheel_home.mlflow_artifacts.as_uri())
    run_id = client.create_run(exp_id).info.run_id
    runs = {"eval": run_id, "training": None, "gone": "0" * 32}
    assert run_links(flywheel_home.mlflow_uri, runs) == {"eval": f"{DEFAULT_UI_URL}/#/experiments/{exp_id}/runs/{run_id}"}
    moved = run_links(flywheel_home.mlflow_uri, runs, ui="http://mlflow.team:8080/")
    assert moved == {"eval": f"http://mlflow.team:8080/#/experiments/{exp_id}/runs/{run_id}"}


def test_an_mlflow_run_links_back_to_its_dagster_run(flywheel_home, seed_mlflow_db):
    from mlflow import MlflowClient

    seed_mlflow_db(flywheel_home)
    client = MlflowClient(flywheel_home.mlflow_uri)
    run_id = client.create_run(ensure_experiment(client, EVAL_EXPERIMENT)).info.run_id
    client.set_tag(run_id, NOTE_TAG, "the eval report")
    for _ in range(2):  # linking again adds nothing
        link_dagster_run(flywheel_home.mlflow_uri, run_id, "d-123", "http://dagster:3000/")
    tags = client.get_run(run_id).data.tags
    assert tags[DAGSTER_RUN_TAG] == "d-123"
    assert tags[NOTE_TAG] == "Dagster run: [d-123](http://dagster:3000/runs/d-123)\n\nthe eval report"
