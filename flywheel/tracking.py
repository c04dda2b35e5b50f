"""Links from the flywheel's records to the MLflow UI, and the experiments' descriptions.

Dagster metadata and run tags link into the MLflow UI (MLflow 3's hash routes:
`#/experiments/<id>/runs/<run>`, `#/models/<name>/versions/<v>`), so a person can go from an asset
to the run or model version behind it. The UI's address is configurable; by default it is the
tracking server itself when there is one, else the local `make mlflow` server.

Plain functions with no MLflow import at module level, so assets and the telemetry can use them cheaply.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

DEFAULT_UI_URL = "http://127.0.0.1:5000"
"""Where `make mlflow` serves the UI of the local store (`$FLYWHEEL_HOME/mlflow.db`)."""

DEFAULT_DAGSTER_UI_URL = "http://127.0.0.1:3000"
"""Where `make dagster` (dagster dev) serves the Dagster UI; MLflow runs link back to their Dagster run there."""

DAGSTER_RUN_TAG = "flywheel.dagster_run_id"
"""The MLflow run tag naming the Dagster run that logged it (its link is in the run's description)."""

NOTE_TAG = "mlflow.note.content"
"""The experiment tag the MLflow UI shows as the experiment's description."""

TRAINING_EXPERIMENT = "flywheel-rlvr"
EVAL_EXPERIMENT = "flywheel-eval"
REGISTRY_EXPERIMENT = "flywheel-registry"

EXPERIMENT_DESCRIPTIONS = {
    TRAINING_EXPERIMENT: (
        "Training runs of the flywheel (`rlvr_policy`, `flywheel train`): one run per training stage "
        "(RFT and/or GRPO) of one base model, with its config and reproducibility manifest as params, "
        "per-step metrics (charted first: GRPO's reward `1_reward/*`, RFT's fine-tuning `1_rft/*`, then the pass "
        "rate `2_pass_rate/*`: per GRPO step, or over RFT's sampling round), the "
        "reward curve and the `registered/` folders of the model versions registered from it."),
    EVAL_EXPERIMENT: (
        "Held-out evaluations (`eval_report`, `flywheel evaluate`): one run per evaluation of a candidate "
        "against the champion on the same tasks and seed; pass@1 per domain first (`1_pass_at_1/*`), the "
        "paired differences (`2_diff_vs_baseline/*`), bootstrap CI bounds, cost, failure types, and the "
        "report as artifacts."),
    REGISTRY_EXPERIMENT: (
        "Registration runs of model versions nothing trained here (a base model registered as the first "
        "champion against an MLflow server, which needs a run to hold the version's files): "
        "`model/MODEL_PATH` and `lineage.json`. Trained versions live in their training runs instead."),
}
"""What each experiment holds, shown as its description in the MLflow UI."""


def ui_base(tracking_uri: str, configured: str = "") -> str:
    """The MLflow UI's base URL: `configured` when set, else the tracking server (an http(s) URI),
    else the local `make mlflow` address."""
    if configured:
        return configured.rstrip("/")
    if tracking_uri.startswith(("http://", "https://")):
        return tracking_uri.rstrip("/")
    return DEFAULT_UI_URL


def experiment_url(ui: str, experiment_id: str) -> str:
    """The MLflow UI page of one experiment."""
    return f"{ui.rstrip('/')}/#/experiments/{experiment_id}"


def run_url(ui: str, experiment_id: str, run_id: str) -> str:
    """The MLflow UI page of one run (MLflow 3 route `#/experiments/<id>/runs/<run>`)."""
    return f"{experiment_url(ui, experiment_id)}/runs/{run_id}"


def model_version_url(ui: str, name: str, version: str | int) -> str:
    """The MLflow UI page of one registered model version (`#/models/<name>/versions/<v>`)."""
    return f"{ui.rstrip('/')}/#/models/{quote(name, safe='')}/versions/{version}"


def mlflow_run_url(tracking_uri: str, run_id: str, ui: str = "") -> str:
    """The UI page of run `run_id` of the store at `tracking_uri` (its experiment looked up there)."""
    from mlflow import MlflowClient  # heavy: only a link to a real run loads it

    run = MlflowClient(tracking_uri=tracking_uri).get_run(run_id)
    return run_url(ui_base(tracking_uri, ui), run.info.experiment_id, run_id)


def dagster_run_url(ui: str, run_id: str) -> str:
    """The Dagster UI page of one run."""
    return f"{ui.rstrip('/')}/runs/{run_id}"


def link_dagster_run(tracking_uri: str, mlflow_run_id: str, dagster_run_id: str, dagster_ui: str) -> None:
    """Mark MLflow run `mlflow_run_id` with the Dagster run that logged it: the `DAGSTER_RUN_TAG` tag, and a link
    to the run's Dagster page at the start of its description (the MLflow UI renders it as Markdown)."""
    from mlflow import MlflowClient  # heavy: only where a run was logged anyway

    client = MlflowClient(tracking_uri=tracking_uri)
    note = client.get_run(mlflow_run_id).data.tags.get(NOTE_TAG, "")
    link = f"Dagster run: [{dagster_run_id}]({dagster_run_url(dagster_ui, dagster_run_id)})"
    client.set_tag(mlflow_run_id, DAGSTER_RUN_TAG, dagster_run_id)
    if link not in note:
        client.set_tag(mlflow_run_id, NOTE_TAG, f"{link}\n\n{note}".strip())


def run_links(tracking_uri: str, runs: dict[str, str | None], ui: str = "") -> dict[str, str]:
    """The MLflow UI pages of `runs` (name -> run id), built now from the configured address (`ui_base`), so a
    link printed today follows today's MLflow address; runs the store does not know are left out."""
    from mlflow import MlflowClient  # heavy: only where a run was logged anyway
    from mlflow.exceptions import MlflowException

    client, base, out = MlflowClient(tracking_uri=tracking_uri), ui_base(tracking_uri, ui), {}
    for name, run_id in runs.items():
        if not run_id:
            continue
        try:
            out[name] = run_url(base, client.get_run(run_id).info.experiment_id, run_id)
        except MlflowException:
            continue
    return out


def ensure_experiment(client: Any, name: str, artifact_location: str | None = None, description: str = "") -> str:
    """The id of experiment `name` (created with `artifact_location` when missing), with its description
    (`description`, else `EXPERIMENT_DESCRIPTIONS[name]`) set when it has none yet; one someone edited is kept."""
    from mlflow.exceptions import MlflowException  # heavy: only where MLflow is used anyway

    exp = client.get_experiment_by_name(name)
    if exp is None:
        try:
            exp_id = client.create_experiment(name, artifact_location=artifact_location)
        except MlflowException:  # created concurrently
            exp_id = client.get_experiment_by_name(name).experiment_id
        tags: dict[str, str] = {}
    else:
        exp_id, tags = exp.experiment_id, dict(exp.tags)
    note = description or EXPERIMENT_DESCRIPTIONS.get(name)
    if note and not tags.get(NOTE_TAG):
        client.set_experiment_tag(exp_id, NOTE_TAG, note)
    return exp_id
