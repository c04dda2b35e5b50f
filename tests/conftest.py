"""Shared fixtures: every test gets its own flywheel home, so tests never share state.

Test folders mirror the packages (`tests/<package>/test_<module>.py`) and are not packages themselves
(pytest runs with `--import-mode=importlib`): a test never imports another test module; what several
folders need lives here as a fixture, what one folder needs lives in that folder's conftest.py.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import urllib.request
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest

from flywheel.tasks.suites import train_suite

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]


def pytest_collection_modifyitems(config, items):
    from flywheel.gpu import cuda_available

    if not cuda_available():
        skip = pytest.mark.skip(reason="needs a CUDA GPU; none here")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(skip)


# --- storage -------------------------------------------------------------------------------------------


@pytest.fixture
def flywheel_home(tmp_path, monkeypatch):
    """A fresh `$FLYWHEEL_HOME` for one test (no MLflow server, no releases folder from the environment):
    what the CLI's `storage_from_env()` and the default `StorageResource` both see."""
    from flywheel.commands.storage import HOME_ENV, RELEASES_DIR_ENV, TRACKING_URI_ENV, storage_from_env

    monkeypatch.setenv(HOME_ENV, str(tmp_path / "flywheel_home"))
    monkeypatch.delenv(TRACKING_URI_ENV, raising=False)
    monkeypatch.delenv(RELEASES_DIR_ENV, raising=False)
    return storage_from_env().ensure()


@pytest.fixture
def turn_instance(tmp_path, monkeypatch):
    """What a whole `flywheel turn` in a test runs against: its own Dagster instance, and no MLflow server from
    the environment (the home's own SQLite store)."""
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)


@pytest.fixture
def storage(flywheel_home):
    """The Dagster `StorageResource` of `flywheel_home`."""
    from flywheel_dagster.resources.storage import StorageResource

    return StorageResource(home=str(flywheel_home.home))


# --- MLflow --------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def seed_mlflow_db() -> Callable:
    """`seed(paths)`: copy an already-migrated empty MLflow SQLite store into `paths.home` (creating one
    costs 10-20 s on 2 cores; the template is kept in the temp dir, keyed by MLflow version and user)."""
    import mlflow  # heavy

    template = Path(tempfile.gettempdir()) / f"flywheel-mlflow-template-{mlflow.__version__}-{os.getuid()}.db"

    def seed(paths) -> None:
        if not template.exists():
            tmp = template.with_suffix(f".{os.getpid()}.tmp")
            mlflow.MlflowClient(f"sqlite:///{tmp}").search_experiments()
            os.replace(tmp, template)
        target = paths.home / "mlflow.db"
        if not target.exists():
            shutil.copy(template, target)

    return seed


@pytest.fixture
def mlflow_registry(flywheel_home, seed_mlflow_db):
    """The MLflow model registry of `flywheel_home` (a seeded SQLite store)."""
    from flywheel.registry.mlflow_registry import Registry

    seed_mlflow_db(flywheel_home)
    return Registry(flywheel_home.mlflow_uri, artifact_location=flywheel_home.mlflow_artifacts.as_uri())


@pytest.fixture
def add_candidate(mlflow_registry, tmp_path) -> Callable:
    """`add(name, day, before, after, promoted)`: a past turn's candidate in `mlflow_registry` (a stand-in
    checkpoint folder, its eval and the champion's pass rates, the gate's decision), as the history reads it."""

    def add(name: str, day: str, before: dict, after: dict, promoted: bool):
        ckpt = tmp_path / name
        ckpt.mkdir()
        (ckpt / "config.json").write_text("{}")
        ref = mlflow_registry.register(ckpt, {"base_model": "tiny-v1", "log_partitions": [day],
                                              "eval_pass_rates": after, "champion_pass_rates": before,
                                              "compared_to": "flywheel-policy:1"})
        mlflow_registry.set_tags(ref.version, {"flywheel.promoted": str(promoted).lower(),
                                               "flywheel.gate_reason": name})
        return ref

    return add


# --- tiny models ---------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    """A built `tiny-quick` checkpoint folder (same folder for every module: the build cache hits)."""
    import torch  # heavy

    from flywheel.models.build import build_tiny_model
    from flywheel.models.recipe import QUICK

    torch.set_num_threads(1)
    out = tmp_path_factory.getbasetemp() / "tiny-quick-model"
    return build_tiny_model(out, QUICK).path


@pytest.fixture(scope="session")
def tiny_model(tiny_model_dir):
    """(model, tokenizer) loaded once per session: tests must not change its weights in place."""
    from flywheel.rollout.checkpoint import load_model

    return load_model(tiny_model_dir)


@pytest.fixture(scope="session")
def install_tiny_quick(tiny_model_dir) -> Callable[[Path], Path]:
    """`install(home_models)`: copy the session's `tiny-quick` build to `<home>/models/base/tiny-quick`,
    so an asset run finds it cached."""

    def install(home_models: Path) -> Path:
        dst = home_models / "base" / "tiny-quick"
        if not dst.exists():
            shutil.copytree(tiny_model_dir, dst)
        return dst

    return install


@pytest.fixture(scope="session")
def random_tiny() -> Callable[[Path], Path]:
    """`build(path)`: an untrained tiny Llama (the `tiny-quick` shape, seeded init) and the project's
    tokenizer, saved as an HF checkpoint in `path` (seconds to build): the policy tests train, evaluate,
    register and serve when what it answers does not matter (`tiny_model_dir` is the trained one)."""
    from flywheel.models.build import build_untrained_checkpoint  # heavy: torch, transformers

    return build_untrained_checkpoint


@pytest.fixture(scope="session")
def qwen_checkpoint(tmp_path_factory) -> Path:
    """A brought checkpoint, built offline: random `Qwen2ForCausalLM` weights (tiny shape) and a tokenizer with
    Qwen2.5's chat template (`flywheel.models.random_checkpoint`); tests must not write into it."""
    from flywheel.models.random_checkpoint import build_random_checkpoint  # heavy: torch, transformers

    return build_random_checkpoint(tmp_path_factory.getbasetemp() / "qwen2-random")


# --- raw logs ------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def rec() -> Callable[..., dict]:
    """`rec(i, **fields)`: one valid task-log record (a field set to `...` is left out)."""

    def make(i: int | str, **kw) -> dict:
        r = {
            "id": f"r{i}", "timestamp": "2026-12-01T10:00:00Z", "task_id": f"t{i}", "domain": "math",
            "model": "tiny:v1", "messages": [{"role": "user", "content": f"What is {i}+1?"}],
            "outcome": {"status": "success", "passed": True}, "reference": {"answer": str(i)},
        }
        r.update(kw)
        return {k: v for k, v in r.items() if v is not ...}

    return make


@pytest.fixture(scope="session")
def write_jsonl() -> Callable[[Path, list], None]:
    """`write(path, lines)`: one line per item; dicts as JSON, str and bytes as they are (bad lines too)."""

    def write(path: Path, lines: list) -> None:
        with open(path, "wb") as f:
            for ln in lines:
                f.write(ln if isinstance(ln, bytes) else (ln if isinstance(ln, str) else json.dumps(ln)).encode())
                f.write(b"\n")

    return write


@pytest.fixture
def s3(monkeypatch):
    """A fresh S3 server on 127.0.0.1 (moto's, objects in memory) with a `logs` bucket: `.fs` (pyarrow's
    S3 client on it), `.query` (the URI query string that points a `s3://` URI at it), `.put(key, bytes)`."""
    moto_server = pytest.importorskip("moto.server", reason="moto[server] is a dev dependency")
    import pyarrow.fs as pafs

    for k, v in {"AWS_ACCESS_KEY_ID": "flywheel-test", "AWS_SECRET_ACCESS_KEY": "flywheel-test",
                 "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}.items():
        monkeypatch.setenv(k, v)
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    # moto keeps its buckets per process, not per server: start every test from an empty store
    urllib.request.urlopen(urllib.request.Request(f"http://{host}:{port}/moto-api/reset", method="POST")).close()
    fs = pafs.S3FileSystem(endpoint_override=f"{host}:{port}", scheme="http", region="us-east-1",
                           allow_bucket_creation=True)
    fs.create_dir("logs")

    def put(key: str, data: bytes) -> None:
        with fs.open_output_stream(key) as f:
            f.write(data)

    try:
        yield SimpleNamespace(fs=fs, query=f"endpoint_override={host}:{port}&scheme=http&region=us-east-1", put=put)
    finally:
        server.stop()


# --- sandbox -------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def local_sandbox() -> None:
    """Skips the test (saying why) where the project's local sandbox cannot run."""
    from flywheel.sandbox.local import available

    ok, why = available()
    if not ok:
        pytest.skip(f"local sandbox unavailable: {why}")


@pytest.fixture(scope="module")
def sandbox_pool(local_sandbox):
    """A warm local sandbox pool (2 workers) for one test module, closed after it."""
    from flywheel.sandbox import get_pool

    pool = get_pool(workers=2)
    yield pool
    pool.close()


@pytest.fixture(scope="session")
def docker_sandbox():
    """A `DockerSandbox` with its image, on `DOCKER_HOST` or the private engine `scripts/dockerd.sh` starts.

    Skips (saying why) only when no engine can start here; an engine started here is stopped at the end.
    """
    from flywheel.sandbox.docker import DockerSandbox, engine_available

    ok, why = engine_available()
    script = REPO / "scripts" / "dockerd.sh"
    started = False
    if not ok and not os.environ.get("FLYWHEEL_NO_DOCKER"):
        root = os.environ.get("FLYWHEEL_DOCKER_ROOT", "/tmp/flywheel-docker")
        r = subprocess.run(["bash", str(script), "start"], capture_output=True, text=True, timeout=300)
        if r.returncode == 0:
            started = True
            ok, why = engine_available(f"unix://{root}/docker.sock")
        else:
            reason = Path(root, "why").read_text().strip() if Path(root, "why").exists() else r.stderr.strip()
            why = f"{why}; scripts/dockerd.sh start failed: {reason}"
    try:
        if not ok:
            pytest.skip(f"no Docker engine can start here: {why}")
        sb = DockerSandbox()
        sb.ensure_image()
        yield sb
        sb.close()
    finally:
        if started:
            subprocess.run(["bash", str(script), "stop"], capture_output=True)


# --- mined task pool -----------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def fill_task_pool() -> Callable:
    """`fill(con, n=2, broken=True)`: the `task_pool` table (mining's column contract) filled from the
    train suites (n tasks per domain, each with a logged failure), plus deliberately broken tasks."""
    from flywheel.environments.agent.inventory import TOOLS
    from flywheel.mining.pool import TASK_POOL_COLUMNS

    def fill(con, n: int = 2, broken: bool = True) -> list[tuple]:
        con.execute("CREATE OR REPLACE TABLE task_pool (" + ", ".join(f"{c} {t}" for c, t in TASK_POOL_COLUMNS) + ")")
        rows = []

        def add(task_id, domain, prompt, ref, failed):
            rows.append((task_id, domain, prompt, json.dumps(ref), failed, 4, 1, 0.25, 0.7, "frontier", len(rows) + 1))

        for d, failed in (("math", "Answer: -1"), ("code", "```python\ndef nope():\n    pass\n```"), ("agent", "")):
            for t in train_suite(d, n):
                add(t.task_id, d, t.prompt, t.reference, failed or None)
        if broken:
            m = train_suite("math", n + 1)[-1]
            add("bad-log", "math", m.prompt, {"answer": m.reference["answer"]}, m.solution)  # "failure" is right
            add("bad-ref", "code", "def f(x):\n", {"entry_point": "f"}, None)  # no tests
            add("weak-test", "code", "def f(x):\n", {"entry_point": "f", "test": "def check(candidate):\n    pass\n",
                                                     "canonical_solution": "    return x\n"}, None)
            add("no-gold", "code", "def f(x):\n", {"entry_point": "f", "test": "def check(candidate):\n"
                                                   "    assert candidate(1) == 1\n"}, None)
            add("noop-goal", "agent", "p", {"tools": TOOLS, "initial_state": {"a": 1}, "goal": {"a": 1}}, None)
        con.executemany("INSERT INTO task_pool VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
        return rows

    return fill


@pytest.fixture(scope="session")
def log_gold() -> Callable:
    """`log(paths, tasks)`: the warehouse under `paths` holds each task's gold solution as a logged success
    (what RFT re-verifies and keeps), ingested through the real ingest."""
    from flywheel.logs.ingest import ingest
    from flywheel.world.responder import messages_from_text

    def log(paths, tasks) -> None:
        lines = [{"id": f"g-{i}", "timestamp": "2026-12-01T10:00:00Z", "task_id": t.task_id, "domain": t.domain,
                  "model": "tiny-v1", "messages": [{"role": "user", "content": t.prompt},
                                                   *messages_from_text(t.domain, t.solution)],
                  "outcome": {"passed": True}, "reference": t.reference} for i, t in enumerate(tasks)]
        src = paths.home / "gold.jsonl"
        src.write_text("\n".join(json.dumps(r) for r in lines) + "\n")
        assert ingest(src, paths.warehouse).ingested == len(lines)

    return log
