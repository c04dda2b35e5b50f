"""The MLflow registry on a real SQLite store: lineage tags, promotion both ways, snapshots, rollback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flywheel.evaluation.runner import compare
from flywheel.registry.gate import GateConfig
from flywheel.registry.mlflow_registry import VERSIONS_TAG, promote_if_better, rollback
from flywheel.registry.serving import serving_manifest
from flywheel.tracking import REGISTRY_EXPERIMENT


def _training_run(paths) -> str:
    """A finished MLflow training run, as the trainer's telemetry leaves it."""
    from flywheel.train.common.telemetry import Telemetry

    tele = Telemetry(paths.mlflow_uri, artifact_root=paths.mlflow_artifacts)
    run_id = tele.start("rlvr-tiny-v1", {"steps": 1})
    tele.finish()
    return run_id


def _file(folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("{}")
    return folder / name


def test_registered_version_links_its_training_run(mlflow_registry, flywheel_home, tmp_path):
    """The version's MLflow run is the run that trained it, which lists the version; its lineage tags carry the
    log partitions and the Dagster run; a base model's version has no run on a local store."""
    training_run = _training_run(flywheel_home)
    lineage = {"base_model": "tiny-v1", "log_partitions": ["2026-12-01", "2026-12-02"],
               "training_run_id": training_run, "dagster_run_id": "dagster-run-1"}
    first, again = (mlflow_registry.register(tmp_path, lineage, serving={"engine": "vllm"}) for _ in range(2))
    for ref in (first, again):
        mv = mlflow_registry.client.get_model_version(mlflow_registry.name, ref.version)
        assert mv.run_id == training_run and mv.source.startswith(f"runs:/{training_run}/registered/")
        assert json.loads(mv.tags["flywheel.log_partitions"]) == ["2026-12-01", "2026-12-02"]
        assert mv.tags["flywheel.dagster_run_id"] == "dagster-run-1"
        folder = mv.source.removeprefix(f"runs:/{training_run}/")
        files = {Path(f.path).name for f in mlflow_registry.client.list_artifacts(training_run, folder)}
        assert files == {"MODEL_PATH", "lineage.json", "serving.json"}
    # registering the same training run twice keeps each version's own source folder
    assert mlflow_registry.client.get_model_version(mlflow_registry.name, first.version).source != \
        mlflow_registry.client.get_model_version(mlflow_registry.name, again.version).source
    # the training run lists the versions made from it
    listed = mlflow_registry.client.get_run(training_run).data.tags[VERSIONS_TAG]
    assert listed == f"flywheel-policy:{first.version}, flywheel-policy:{again.version}"
    # nothing trained a base model: on a local store it has no run at all, its source is its folder
    base = mlflow_registry.ensure_champion(tmp_path, "tiny-v1")
    mv = mlflow_registry.client.get_model_version(mlflow_registry.name, base.version)
    assert not mv.run_id and mv.source == tmp_path.resolve().as_uri() and mv.tags["flywheel.role"] == "base"
    assert mlflow_registry.client.get_experiment_by_name(REGISTRY_EXPERIMENT) is None  # no empty registration run
    mlflow_registry.log_version_artifact(base.version, _file(tmp_path / "out", "serving.json"))
    assert (tmp_path / "serving.json").read_text() == "{}"  # a run-less version's files go beside its weights


def test_promote_refuse_and_rollback_on_sqlite(base_report, better_report, regressed_report, mlflow_registry, flywheel_home, tmp_path):
    base_dir, cand_dir = tmp_path / "base", tmp_path / "cand"
    base_dir.mkdir(), cand_dir.mkdir()
    (cand_dir / "config.json").write_text("{}")
    champ = mlflow_registry.ensure_champion(base_dir, "tiny-v1")
    assert champ.is_base and mlflow_registry.champion().version == champ.version == "1"
    assert mlflow_registry.ensure_champion(base_dir, "tiny-v1").version == "1"  # idempotent

    training_run = _training_run(flywheel_home)
    lineage = {"base_model": "tiny-v1", "log_partitions": ["2026-12-01"], "training_run_id": training_run,
               "eval_run_id": "def"}
    c1 = mlflow_registry.register(cand_dir, lineage, serving=serving_manifest(cand_dir, "flywheel-policy:2"))
    got = mlflow_registry.get(c1.version)
    assert got.tags["flywheel.base_model"] == "tiny-v1"
    assert json.loads(got.tags["flywheel.log_partitions"]) == ["2026-12-01"]
    assert got.tags["flywheel.training_run_id"] == training_run and got.model_path == str(cand_dir.resolve())

    d = promote_if_better(mlflow_registry, c1, compare(better_report, base_report), GateConfig(margin=0.05))
    assert d.promoted and d.champion_before == "flywheel-policy:1" and d.champion_after == "flywheel-policy:2"
    assert mlflow_registry.champion().version == "2"
    assert mlflow_registry.get("2").tags["flywheel.promoted"] == "true"

    c2 = mlflow_registry.register(cand_dir, lineage)
    d = promote_if_better(mlflow_registry, c2, compare(regressed_report, better_report), GateConfig())
    assert not d.promoted and "code regressed" in d.reason and d.regressions == ("code",)
    assert mlflow_registry.champion().version == "2"  # champion kept
    assert mlflow_registry.get(c2.version).tags["flywheel.promoted"] == "false"
    assert mlflow_registry.history() == ["1", "2"]

    snap = mlflow_registry.register(cand_dir, lineage, snapshot_root=tmp_path / "mlflow_registry")  # version 4
    (cand_dir / "weights.bin").write_bytes(b"retrained")  # the trainer overwrites its output folder
    assert snap.model_path.startswith(str(tmp_path / "mlflow_registry")) and snap.tags["flywheel.source_path"] == str(cand_dir)
    assert not (Path(snap.model_path) / "weights.bin").exists()

    r = rollback(mlflow_registry)
    assert (r.from_version, r.to_version) == ("2", "1") and mlflow_registry.champion().version == "1"
    with pytest.raises(ValueError):
        rollback(mlflow_registry)  # nothing before the base model
    r = rollback(mlflow_registry, to_version="3")  # an explicit move to a never-champion version
    assert mlflow_registry.champion().version == "3" and r.history == ["1", "3"]
    assert rollback(mlflow_registry).to_version == "1"
    from mlflow.exceptions import MlflowException

    with pytest.raises(MlflowException):
        rollback(mlflow_registry, to_version="99")


def test_a_moved_home_reads_its_own_models(flywheel_home, seed_mlflow_db, tmp_path):
    """issue 27: versions recorded absolute model paths, so a moved home served (or missed) the old folder."""
    import shutil

    from flywheel.paths import FlywheelPaths
    from flywheel.registry.mlflow_registry import Registry, training_start

    seed_mlflow_db(flywheel_home)
    ckpt = flywheel_home.models / "policies" / "tiny-v1"
    ckpt.mkdir(parents=True)
    (ckpt / "config.json").write_text("{}")
    reg = Registry(flywheel_home.mlflow_uri)
    ref = reg.register(ckpt, {"base_model": "tiny-v1"})
    reg.set_champion(ref.version)
    assert ref.model_path == str(ckpt.resolve()) and ref.tags["flywheel.model_path"] == "models/policies/tiny-v1"
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "config.json").write_text("{}")
    assert reg.register(outside).tags["flywheel.model_path"] == str(outside.resolve())  # outside the home: as is

    moved = FlywheelPaths(home=tmp_path / "moved_home")
    shutil.move(flywheel_home.home, moved.home)
    champ = Registry(moved.mlflow_uri).champion()
    assert champ.model_path == str(moved.home.resolve() / "models" / "policies" / "tiny-v1")
    assert (Path(champ.model_path) / "config.json").is_file()
    assert training_start(moved.mlflow_uri, "tiny-v1", "unused") == (champ.model_path, f"{champ.name}:1 (the champion)")
