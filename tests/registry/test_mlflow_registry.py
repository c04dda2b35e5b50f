"""Promotion gate (both ways), lineage tags, serving manifest and rollback against a real MLflow SQLite store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flywheel.evaluation.runner import EvalReport, TaskResult, aggregate, compare
from flywheel.evaluation.suites import EvalConfig
from flywheel.gpu import GpuSpec
from flywheel.registry.gate import GateConfig, decide
from flywheel.registry.mlflow_registry import Registry, promote_if_better, rollback
from flywheel.registry.serving import serving_manifest, write_serving_manifest

CFG = EvalConfig(n_samples=2, n_boot=200)
_TEMPLATE = None


def seed_mlflow_db(paths) -> None:
    """Copy an already-migrated empty MLflow SQLite store into `paths` (creating one costs 10-20 s on 2 cores)."""
    import os
    import shutil
    import tempfile
    from pathlib import Path

    import mlflow

    global _TEMPLATE
    if _TEMPLATE is None or not _TEMPLATE.exists():
        t = Path(tempfile.gettempdir()) / f"flywheel-mlflow-template-{mlflow.__version__}-{os.getuid()}.db"
        if not t.exists():
            tmp = t.with_suffix(f".{os.getpid()}.tmp")
            mlflow.MlflowClient(f"sqlite:///{tmp}").search_experiments()
            os.replace(tmp, t)
        _TEMPLATE = t
    target = paths.home / "mlflow.db"
    if not target.exists():
        shutil.copy(_TEMPLATE, target)


def report(model: str, passes: dict[str, list[tuple[bool, bool]]]) -> EvalReport:
    """An EvalReport from per-domain per-task sample outcomes (what the runner would have scored)."""
    tasks = [TaskResult(f"{d}-{i}", d, p, 1.0, 10, 5, 1.0, 0.0)
             for d, ps in passes.items() for i, p in enumerate(ps)]
    return EvalReport(model, CFG, tasks, aggregate(tasks, CFG))


GOOD, BAD, HALF = (True, True), (False, False), (True, False)
BASE = report("base", {"math": [HALF] * 6 + [BAD] * 4, "code": [HALF] * 4 + [BAD] * 2})
BETTER = report("cand", {"math": [GOOD] * 6 + [BAD] * 4, "code": [HALF] * 4 + [BAD] * 2})
REGRESSED = report("cand", {"math": [GOOD] * 10, "code": [BAD] * 6})  # better overall, code collapses


def test_gate_is_a_pure_decision():
    ok, why = decide(compare(BETTER, BASE), GateConfig(margin=0.02))
    assert ok and "promoted" in why
    ok, why = decide(compare(BETTER, BASE), GateConfig(margin=0.5))
    assert not ok and "margin 0.500" in why
    ok, why = decide(compare(REGRESSED, BASE), GateConfig(non_inferiority=0.05))
    assert decide(compare(REGRESSED, BASE), GateConfig(non_inferiority=0.6))[0]  # the margin is the gate's
    assert not ok and "code regressed by 0.333" in why
    ok, why = decide(compare(BASE, BASE), GateConfig())
    assert not ok and "+0.000" in why
    assert decide(None, GateConfig())[0]


@pytest.fixture
def registry(flywheel_home):
    seed_mlflow_db(flywheel_home)
    return Registry(flywheel_home.mlflow_uri, artifact_location=flywheel_home.mlflow_artifacts.as_uri())


def _training_run(paths) -> str:
    """A finished MLflow training run, as the trainer's telemetry leaves it."""
    from flywheel.train.telemetry import Telemetry

    tele = Telemetry(paths.mlflow_uri, artifact_root=paths.mlflow_artifacts)
    run_id = tele.start("rlvr-tiny-v1", {"steps": 1})
    tele.finish()
    return run_id


def test_registered_version_links_its_training_run(registry, flywheel_home, tmp_path):
    """The version's MLflow run is the run that trained it; its lineage tags carry the log partitions."""
    training_run = _training_run(flywheel_home)
    lineage = {"base_model": "tiny-v1", "log_partitions": ["2026-12-01", "2026-12-02"],
               "training_run_id": training_run, "dagster_run_id": "dagster-run-1"}
    first, again = (registry.register(tmp_path, lineage, serving={"engine": "vllm"}) for _ in range(2))
    for ref in (first, again):
        mv = registry.client.get_model_version(registry.name, ref.version)
        assert mv.run_id == training_run and mv.source.startswith(f"runs:/{training_run}/registered/")
        assert json.loads(mv.tags["flywheel.log_partitions"]) == ["2026-12-01", "2026-12-02"]
        assert mv.tags["flywheel.dagster_run_id"] == "dagster-run-1"
        folder = mv.source.removeprefix(f"runs:/{training_run}/")
        files = {Path(f.path).name for f in registry.client.list_artifacts(training_run, folder)}
        assert files == {"MODEL_PATH", "lineage.json", "serving.json"}
    # registering the same training run twice keeps each version's own source folder
    assert registry.client.get_model_version(registry.name, first.version).source != \
        registry.client.get_model_version(registry.name, again.version).source
    base = registry.ensure_champion(tmp_path, "tiny-v1")  # nothing trained a base model: its own registration run
    assert registry.client.get_run(registry.client.get_model_version(registry.name, base.version).run_id
                                   ).data.tags["flywheel.kind"] == "registration"


def test_promote_refuse_and_rollback_on_sqlite(registry, flywheel_home, tmp_path):
    base_dir, cand_dir = tmp_path / "base", tmp_path / "cand"
    base_dir.mkdir(), cand_dir.mkdir()
    (cand_dir / "config.json").write_text("{}")
    champ = registry.ensure_champion(base_dir, "tiny-v1")
    assert champ.is_base and registry.champion().version == champ.version == "1"
    assert registry.ensure_champion(base_dir, "tiny-v1").version == "1"  # idempotent

    training_run = _training_run(flywheel_home)
    lineage = {"base_model": "tiny-v1", "log_partitions": ["2026-12-01"], "training_run_id": training_run,
               "eval_run_id": "def"}
    c1 = registry.register(cand_dir, lineage, serving=serving_manifest(cand_dir, "flywheel-policy:2"))
    got = registry.get(c1.version)
    assert got.tags["flywheel.base_model"] == "tiny-v1"
    assert json.loads(got.tags["flywheel.log_partitions"]) == ["2026-12-01"]
    assert got.tags["flywheel.training_run_id"] == training_run and got.model_path == str(cand_dir.resolve())

    d = promote_if_better(registry, c1, compare(BETTER, BASE), GateConfig(margin=0.05))
    assert d.promoted and d.champion_before == "flywheel-policy:1" and d.champion_after == "flywheel-policy:2"
    assert registry.champion().version == "2"
    assert registry.get("2").tags["flywheel.promoted"] == "true"

    c2 = registry.register(cand_dir, lineage)
    d = promote_if_better(registry, c2, compare(REGRESSED, BETTER), GateConfig())
    assert not d.promoted and "code regressed" in d.reason and d.regressions == ("code",)
    assert registry.champion().version == "2"  # champion kept
    assert registry.get(c2.version).tags["flywheel.promoted"] == "false"
    assert registry.history() == ["1", "2"]

    snap = registry.register(cand_dir, lineage, snapshot_root=tmp_path / "registry")  # version 4
    (cand_dir / "weights.bin").write_bytes(b"retrained")  # the trainer overwrites its output folder
    assert snap.model_path.startswith(str(tmp_path / "registry")) and snap.tags["flywheel.source_path"] == str(cand_dir)
    assert not (Path(snap.model_path) / "weights.bin").exists()

    r = rollback(registry)
    assert (r.from_version, r.to_version) == ("2", "1") and registry.champion().version == "1"
    with pytest.raises(ValueError):
        rollback(registry)  # nothing before the base model
    r = rollback(registry, to_version="3")  # an explicit move to a never-champion version
    assert registry.champion().version == "3" and r.history == ["1", "3"]
    assert rollback(registry).to_version == "1"
    from mlflow.exceptions import MlflowException

    with pytest.raises(MlflowException):
        rollback(registry, to_version="99")


def test_rollback_cli_json(registry, flywheel_home, tmp_path, capsys, monkeypatch):
    from flywheel.cli import main

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)  # the CLI falls back to $FLYWHEEL_HOME's store

    registry.ensure_champion(tmp_path, "tiny-v1")
    registry.set_champion(registry.register(tmp_path, {"base_model": "tiny-v1"}).version)
    assert main(["rollback", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["from_version"] == "2" and out["to_version"] == "1" and out["champion"] == "flywheel-policy:1"
    assert main(["rollback", "--to", "2"]) == 0
    assert "flywheel-policy:2" in capsys.readouterr().out
    assert main(["rollback", "--to", "7", "--json"]) != 0


def test_serving_manifest_uses_gpu_spec(tmp_path):
    m = serving_manifest(tmp_path / "m", "flywheel-policy:3", GpuSpec(count=4, kind="nvidia-h100"))
    default, fast = m["variants"]["default"]["args"], m["variants"]["fast"]["args"]
    assert default[default.index("--tensor-parallel-size") + 1] == "4"
    assert "--enable-prefix-caching" in default and "--enable-chunked-prefill" in default
    assert "--quantization" not in default
    assert fast[fast.index("--quantization") + 1] == "fp8"
    spec = json.loads(fast[fast.index("--speculative-config") + 1])
    assert spec["method"] == "ngram"
    assert m["variants"]["default"]["command"].startswith("vllm serve ")
    assert "127.0.0.1" in default  # loopback unless configured
    paths = write_serving_manifest(tmp_path / "m", m)
    import yaml

    assert yaml.safe_load(paths["yaml"].read_text()) == json.loads(paths["json"].read_text())
    cpu = serving_manifest("p", "x", GpuSpec(count=0))
    assert cpu["variants"]["default"]["args"][cpu["variants"]["default"]["args"].index("--tensor-parallel-size") + 1] == "1"
