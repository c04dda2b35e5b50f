"""The registry against a real `mlflow server` on 127.0.0.1: register, gate, promote, refuse, roll back."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from flywheel.evaluation.runner import compare
from flywheel.paths import FlywheelPaths
from flywheel.registry.gate import GateConfig
from flywheel.registry.mlflow_registry import VERSIONS_TAG, Registry, promote_if_better, rollback
from flywheel.tracking import NOTE_TAG, REGISTRY_EXPERIMENT, mlflow_run_url


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def mlflow_server(tmp_path, seed_mlflow_db):
    port = _free_port()
    seed_mlflow_db(FlywheelPaths(tmp_path))  # a migrated store: the server starts without running migrations
    mlflow_bin = Path(sys.executable).with_name("mlflow")
    log = open(tmp_path / "server.log", "w")
    env = {**os.environ, "MLFLOW_ENABLE_TELEMETRY": "false", "DO_NOT_TRACK": "1",
           "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}  # no background job-runner process
    proc = subprocess.Popen(
        [str(mlflow_bin), "server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
         "--backend-store-uri", f"sqlite:///{tmp_path / 'mlflow.db'}",
         "--artifacts-destination", (tmp_path / "artifacts").as_uri()],
        stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 90
        while True:
            try:
                with urllib.request.urlopen(url + "/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.time() > deadline:
                log.flush()
                pytest.fail(f"mlflow server did not start: {(tmp_path / 'server.log').read_text()[-2000:]}")
            time.sleep(0.5)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # the server's own process group: its gunicorn/uvicorn workers too
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)
        log.close()


def test_gate_and_rollback_against_mlflow_server(base_report, better_report, regressed_report, mlflow_server, tmp_path, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    reg = Registry(mlflow_server)
    base = reg.ensure_champion(tmp_path, "tiny-v1")
    training_run = reg.client.create_run(reg.client.create_experiment("flywheel-rlvr"), run_name="rlvr-tiny-v1")
    cand = reg.register(tmp_path, {"base_model": "tiny-v1", "training_run_id": training_run.info.run_id})
    assert promote_if_better(reg, cand, compare(better_report, base_report), GateConfig()).promoted
    worse = reg.register(tmp_path, {"base_model": "tiny-v1"})
    refused = promote_if_better(reg, worse, compare(regressed_report, better_report), GateConfig())
    assert not refused.promoted and "regressed" in refused.reason
    assert reg.champion().version == cand.version
    # a second client sees the same state: it lives in the server, not in this process
    assert Registry(mlflow_server).champion().uri == cand.uri
    back = rollback(reg)
    assert back.to_version == base.version and Registry(mlflow_server).champion().is_base
    arts = [f.path for f in reg.client.list_artifacts(reg.client.get_model_version(reg.name, worse.version).run_id,
                                                       "model")]
    assert "model/MODEL_PATH" in arts
    mv = reg.client.get_model_version(reg.name, cand.version)  # linked to its training run, artifacts uploaded there
    folder = mv.source.removeprefix(f"runs:/{training_run.info.run_id}/")
    assert mv.run_id == training_run.info.run_id and folder != mv.source
    assert f"{folder}/MODEL_PATH" in [f.path for f in reg.client.list_artifacts(mv.run_id, folder)]
    assert reg.client.get_run(mv.run_id).data.tags[VERSIONS_TAG] == cand.uri
    # a server needs a run to hold an untrained version's files: a registration run in a described experiment
    assert "Registration runs" in reg.client.get_experiment_by_name(REGISTRY_EXPERIMENT).tags[NOTE_TAG]
    # links go to the server's own UI, and the page is there
    link = mlflow_run_url(mlflow_server, mv.run_id)
    assert link == f"{mlflow_server}/#/experiments/{training_run.info.experiment_id}/runs/{mv.run_id}"
    with urllib.request.urlopen(link.split("#", 1)[0], timeout=10) as page:
        assert page.status == 200 and b"<html" in page.read(2000).lower()
