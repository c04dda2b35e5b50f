"""What a repo task's `reference` holds, checked once: the snapshot, its protected tests, the hidden tests.

    reference = {
        "files": {path: text},          # the repository the model starts from (visible tests included)
        "test_files": [path, ...],      # the visible tests: protected, restored before judging
        "hidden_tests": {path: text},   # never shown to the model, never written to its tree
        "snapshot_sha256": "...",       # tree_hash(files): checked, so a task cannot drift silently
        "timeout_s": 10.0,              # wall time for one run of all the tests
        "fix": {path: text},            # optional: the known fix (final contents of changed files)
    }
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from flywheel.environments.repo.snapshot import Snapshot, path_error
from flywheel.environments.verdict import TaskError

FORBIDDEN_NAMES = ("conftest.py", "sitecustomize.py", "usercustomize.py", "pytest.ini", "setup.cfg", "tox.ini")
"""Files that change how tests are collected or how Python starts: adding or changing one fails the verdict."""


def forbidden(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return name in FORBIDDEN_NAMES or name.endswith(".pth")


@dataclass(frozen=True)
class RepoSpec:
    """A repo task's reference, validated: build with `RepoSpec.from_reference`."""

    snapshot: Snapshot
    test_files: tuple[str, ...]
    hidden_tests: tuple[tuple[str, str], ...]
    timeout_s: float
    fix: dict[str, str]

    @classmethod
    def from_reference(cls, ref: Any, where: str = "task reference") -> RepoSpec:
        if not isinstance(ref, dict):
            raise TaskError(f"{where} must be an object, got {type(ref).__name__}")
        for key in ("files", "test_files", "hidden_tests"):
            if key not in ref:
                raise TaskError(f"{where} is missing field {key!r}")
        files, hidden, tests = ref["files"], ref["hidden_tests"], ref["test_files"]
        if not isinstance(files, dict) or not isinstance(hidden, dict) or not isinstance(tests, list):
            raise TaskError(f"{where}: 'files' and 'hidden_tests' must be objects, 'test_files' a list")
        try:
            snap = Snapshot.of(files, f"{where}.files")
        except ValueError as e:
            raise TaskError(str(e)) from e
        for t in tests:
            if t not in snap.files:
                raise TaskError(f"{where}.test_files: {t!r} is not a file of the repository")
        if not hidden:
            raise TaskError(f"{where}.hidden_tests is empty: nothing would judge the result")
        for p, src in hidden.items():
            err = path_error(p) or (f"{p!r} is also a repository file" if p in snap.files else None)
            if err or not isinstance(src, str):
                raise TaskError(f"{where}.hidden_tests: {err or f'{p!r} must map to text'}")
        want = ref.get("snapshot_sha256")
        if want is not None and want != snap.sha256:
            raise TaskError(f"{where}.snapshot_sha256 is {want!r} but the files hash to {snap.sha256!r}")
        timeout = ref.get("timeout_s", 10.0)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= 600:
            raise TaskError(f"{where}.timeout_s must be a number in (0, 600], got {timeout!r}")
        fix = ref.get("fix") or {}
        if not isinstance(fix, dict) or not all(isinstance(v, str) and not path_error(k) for k, v in fix.items()):
            raise TaskError(f"{where}.fix must map repository paths to text")
        return cls(snap, tuple(tests), tuple(sorted(hidden.items())), float(timeout), dict(fix))


def make_reference(files: dict[str, str], test_files: list[str], hidden_tests: dict[str, str],
                   fix: dict[str, str] | None = None, timeout_s: float = 10.0) -> dict[str, Any]:
    """A task reference with its snapshot hash filled in (and checked by parsing it back)."""
    snap = Snapshot.of(files)
    ref = {"files": dict(sorted(files.items())), "test_files": sorted(test_files), "hidden_tests": dict(hidden_tests),
           "snapshot_sha256": snap.sha256, "timeout_s": float(timeout_s)}
    if fix:
        ref["fix"] = dict(fix)
    RepoSpec.from_reference(ref)
    return ref
