"""The lineage UI: the real Dagster webserver on 127.0.0.1, the asset graph in headless Chromium.

Saves `tests/artifacts/lineage.png` (the README's lineage screenshot). Skipped only when no
chromium binary exists and `scripts/install_browser.sh` cannot install one.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "tests" / "artifacts"
FLYWHEEL_ASSETS = ("raw_task_logs", "task_logs", "failure_cases", "task_pool", "verifiers",
                   "base_model", "rlvr_policy", "eval_report", "deployed_model")
CHROME_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
                "--window-size=1600,1000")


def _chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        if shutil.which(name):
            return shutil.which(name)
    r = subprocess.run(["bash", str(ROOT / "scripts" / "install_browser.sh")], capture_output=True, text=True)
    if shutil.which("chromium"):
        return shutil.which("chromium")
    pytest.skip(f"chromium is not installed and could not be installed: {r.stderr.strip()[-300:]}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _graphql(url: str, query: str) -> dict:
    req = urllib.request.Request(url + "/graphql", data=json.dumps({"query": query}).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


@pytest.fixture
def webserver(tmp_path):
    port = _free_port()
    dagster_home = tmp_path / "dagster"
    dagster_home.mkdir()
    shutil.copy(ROOT / "dagster.yaml", dagster_home / "dagster.yaml")
    env = {**os.environ, "DAGSTER_HOME": str(dagster_home), "FLYWHEEL_HOME": str(tmp_path / "flywheel"),
           "DAGSTER_DISABLE_TELEMETRY": "1"}
    log = open(tmp_path / "webserver.log", "w")
    proc = subprocess.Popen(
        ["env", "--default-signal=INT,TERM", str(Path(sys.executable).with_name("dagster-webserver")),
         "-h", "127.0.0.1", "-p", str(port), "-w", "workspace.yaml"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 150
        while True:
            if proc.poll() is not None or time.time() > deadline:
                log.flush()
                pytest.fail(f"webserver did not serve the code location: {(tmp_path / 'webserver.log').read_text()[-3000:]}")
            try:
                data = _graphql(url, "{ assetNodes { assetKey { path } } }").get("data") or {}
                if data.get("assetNodes"):
                    break
                errs = _graphql(url, "{ workspaceOrError { ... on Workspace { locationEntries { "
                                     "locationOrLoadError { __typename ... on PythonError { message } } } } } }")
                for e in (errs.get("data") or {}).get("workspaceOrError", {}).get("locationEntries", []):
                    err = e.get("locationOrLoadError") or {}
                    if err.get("__typename") == "PythonError":
                        pytest.fail(f"code location failed to load: {err['message'][:2000]}")
            except OSError:
                pass
            time.sleep(1)
        _graphql(url, "mutation { setNuxSeen }")  # the community pop-up would cover the graph
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)
        log.close()


def _chrome(chromium: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    profile = tmp_path / f"chrome-{time.monotonic_ns()}"
    return subprocess.run([chromium, *CHROME_FLAGS, f"--user-data-dir={profile}", "--virtual-time-budget=15000",
                           *args], capture_output=True, timeout=120)


def test_asset_graph_in_headless_chromium(webserver, tmp_path):
    chromium = _chromium()
    lineage = f"{webserver}/assets/deployed_model?view=lineage&lineageScope=upstream&lineageDepth=20"
    dom = _chrome(chromium, tmp_path, "--dump-dom", lineage).stdout.decode(errors="replace")
    missing = [a for a in FLYWHEEL_ASSETS if a not in dom]
    assert not missing, f"assets not on the lineage page: {missing}"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "lineage.png"
    shot.unlink(missing_ok=True)
    _chrome(chromium, tmp_path, f"--screenshot={shot}", lineage)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000


def test_a_finished_run_shows_progress_lines_and_links_its_mlflow_run(webserver, tmp_path, flywheel_home, storage,
                                                                    random_tiny, monkeypatch):
    """The UI's run page holds the training's progress lines; `rlvr_policy`'s page links its MLflow run."""
    import dagster as dg
    import mlflow

    from flywheel_dagster.assets.training import RlvrConfig, rlvr_policy
    from flywheel_dagster.resources.gpu import GpuResource
    from flywheel_dagster.resources.ray import RayResource
    from flywheel_dagster.resources.rollout import RolloutEngineResource
    from flywheel_dagster.resources.trainer import TrainerResource

    chromium = _chromium()
    release = "ui-tiny"
    base = random_tiny(flywheel_home.models / "base" / release)
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster"))
    with dg.DagsterInstance.get() as instance:  # the webserver's instance
        instance.add_dynamic_partitions("base_model", [release])
        instance.report_runless_asset_event(dg.AssetMaterialization(
            "base_model", partition=release, metadata={"path": dg.MetadataValue.path(str(base))}))
        result = dg.materialize(
            [rlvr_policy], partition_key=release, instance=instance,
            run_config=dg.RunConfig({"rlvr_policy": RlvrConfig(
                stage="rl", steps=2, prompts_per_step=2, group_size=3, max_new_tokens=8,
                domain_weights={"math": 1.0}, checkpoint_every=0, dev_every=0)}),
            resources={"gpu": GpuResource(device="cpu"), "trainer": TrainerResource(num_threads=1),
                       "storage": storage, "rollout_engine": RolloutEngineResource(), "ray": RayResource()})
    assert result.success
    run_page = _chrome(chromium, tmp_path, "--dump-dom", f"{webserver}/runs/{result.run_id}").stdout.decode(
        errors="replace")
    assert "RLVR steps: 2/2 steps (100%)" in run_page, "no progress line in the run's event log"
    md = result.asset_materializations_for_node("rlvr_policy")[0].metadata
    link = md["mlflow_run"].value
    asset_page = _chrome(chromium, tmp_path, "--dump-dom",
                         f"{webserver}/assets/rlvr_policy?partition={release}").stdout.decode(errors="replace")
    assert f'href="{link}"' in asset_page.replace("&amp;", "&"), "no link to the MLflow run on rlvr_policy's page"
    run_id = link.rsplit("/runs/", 1)[1]
    assert mlflow.MlflowClient(flywheel_home.mlflow_uri).get_run(run_id).info.status == "FINISHED"
