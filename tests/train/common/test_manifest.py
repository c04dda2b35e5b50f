"""The reproducibility manifest records the starting snapshots of a run's repository tasks."""

from __future__ import annotations

from flywheel.environments.repo.generator import generate
from flywheel.tasks.suites import train_suite
from flywheel.train.common.manifest import build_manifest, snapshot_digest


def test_repository_snapshots_are_counted_and_hashed_deterministically():
    tasks = generate("train", 6, seed=5)
    first, again = snapshot_digest(tasks), snapshot_digest(list(reversed(generate("train", 6, seed=5))))
    assert first == again and first["data.repo_snapshots"] == 6 and len(first["data.repo_snapshots_sha256"]) == 64
    assert snapshot_digest(generate("train", 6, seed=6)) != first
    mixed = [*train_suite("math", 3), *tasks]
    assert snapshot_digest(mixed) == first  # other domains carry no snapshot
    assert snapshot_digest(train_suite("math", 3)) == {}
    m = build_manifest({"train": 0}, {"log_partitions": "[]"}, tasks=mixed)
    assert m["data.repo_snapshots_sha256"] == first["data.repo_snapshots_sha256"]
    assert "data.repo_snapshots" not in build_manifest({"train": 0}, tasks=train_suite("math", 3))
