"""Snapshots: one hash per exact tree, checked paths, and byte-identical starts for every rollout."""

from __future__ import annotations

import pytest

from flywheel.environments.repo.env import RepoEnvironment
from flywheel.environments.repo.generator import generate
from flywheel.environments.repo.snapshot import Snapshot, path_error, tree_hash
from flywheel.environments.toolcalls import ToolCall


def test_hash_is_order_free_and_byte_exact():
    a = {"a.py": "x = 1\n", "tests/test_a.py": "def test_x():\n    pass\n"}
    b = dict(reversed(list(a.items())))
    assert tree_hash(a) == tree_hash(b) == Snapshot.of(a).sha256
    assert tree_hash({"a.py": "x = 1\n "}) != tree_hash({"a.py": "x = 1\n"})
    # length prefixes: moving bytes between a path and its content changes the hash
    assert tree_hash({"ab": "c"}) != tree_hash({"a": "bc"})
    assert tree_hash({"a": "", "b": ""}) != tree_hash({"a": "b"})


@pytest.mark.parametrize("path", ["/etc/passwd", "../x.py", "a/../b.py", "./a.py", "a//b.py", "a b.py", "", "main.py",
                                  "a/", "x" * 201])
def test_bad_paths_are_named(path):
    assert path_error(path)
    with pytest.raises(ValueError, match="snapshot"):
        Snapshot.of({path: "x"})


def test_good_paths():
    for p in ("a.py", "pkg/sub/mod_1.py", "tests/test-x.py", ".gitignore"):
        assert path_error(p) is None, p


def test_snapshot_is_immutable_and_fresh_copies_are_private():
    snap = Snapshot.of({"a.py": "x = 1\n"})
    with pytest.raises(TypeError):
        snap.files["a.py"] = b"y"  # type: ignore[index]
    one, two = snap.fresh(), snap.fresh()
    one["a.py"] = b"changed"
    assert two["a.py"] == b"x = 1\n" and snap.files["a.py"] == b"x = 1\n"


def test_two_rollouts_of_one_task_start_byte_identical():
    env = RepoEnvironment(sandbox=object())  # no test run here: the sandbox is never touched
    task = generate("train", 1, seed=3)[0]
    first = env.reset(task)
    env.step(first, ToolCall("write_file", {"path": "new.py", "content": "x = 2\n"}))
    env.step(first, ToolCall("delete_file", {"path": task.reference["test_files"][0]}))
    second = env.reset(task)
    assert second.sha256 == task.reference["snapshot_sha256"] == task.meta["snapshot_sha256"]
    assert second.files == dict(Snapshot.of(task.reference["files"]).files)
    assert first.sha256 != second.sha256
    again = generate("train", 1, seed=3)[0]  # regenerated from the seed: the same bytes
    assert env.reset(again).sha256 == second.sha256 and again.to_dict() == task.to_dict()
