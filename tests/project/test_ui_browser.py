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
