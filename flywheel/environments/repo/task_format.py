"""Users' own repositories as repo tasks: one directory per task, with a manifest.

    my-task/
      task.toml          # or task.json: the manifest (below)
      repo/              # the repository as the model first sees it, visible tests included
      hidden/            # hidden test files: run when judging, never shown to the model
      solution/          # the known fix: files that replace (or add to) repo/ files, same relative paths

Manifest fields: `prompt` (required: what the model is asked), `visible_tests` (required: paths under
repo/ that are the visible tests; they are protected and restored before judging), `id` (default: the
directory name), `split` ("train" or "heldout"; default: chosen by a hash of the id), `timeout_s`
(default 10: wall time for one run of all the tests). Tests are `test_*` functions (or
`unittest.TestCase` methods) in plain Python; pytest fixtures are not available in the sandbox.
A directory without a manifest whose subdirectories have one is a collection of tasks.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from flywheel.environments.base import SPLITS
from flywheel.environments.repo.generator import render
from flywheel.environments.repo.snapshot import Snapshot
from flywheel.environments.repo.spec import RepoSpec, make_reference
from flywheel.environments.repo.tools import RepoState
from flywheel.environments.task import Task

MANIFESTS = ("task.toml", "task.json")
SKIP_DIRS = {"__pycache__", ".git", ".pytest_cache", ".mypy_cache", ".venv"}


class TaskFormatError(ValueError):
    """A task directory does not follow the format; the message names the file, the field and why."""


def _manifest(task_dir: Path) -> tuple[Path, dict[str, Any]]:
    for name in MANIFESTS:
        path = task_dir / name
        if not path.is_file():
            continue
        try:
            if name.endswith(".toml"):
                import tomllib  # Python >= 3.11

                data = tomllib.loads(path.read_text(encoding="utf-8"))
            else:
                data = json.loads(path.read_text(encoding="utf-8"))
        except ModuleNotFoundError as e:
            raise TaskFormatError(f"{path}: TOML needs Python >= 3.11; use task.json") from e
        except (ValueError, UnicodeDecodeError) as e:
            raise TaskFormatError(f"{path}: not valid {name.rsplit('.', 1)[1].upper()}: {e}") from e
        if not isinstance(data, dict):
            raise TaskFormatError(f"{path}: the manifest must be a table/object")
        return path, data
    raise TaskFormatError(f"{task_dir}: no manifest ({' or '.join(MANIFESTS)})")


def _read_tree(root: Path, manifest: Path, field: str) -> dict[str, str]:
    if not root.is_dir():
        raise TaskFormatError(f"{manifest}: {field}: directory {root} is missing")
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if any(part in SKIP_DIRS for part in rel.parts) or p.is_dir() or p.suffix == ".pyc":
            continue
        if p.is_symlink():
            raise TaskFormatError(f"{manifest}: {field}: {p} is a symbolic link (tasks hold plain files)")
        try:
            out[rel.as_posix()] = p.read_text(encoding="utf-8")
        except UnicodeDecodeError as e:
            raise TaskFormatError(f"{manifest}: {field}: {p} is not UTF-8 text") from e
    return out


def _field(manifest: Path, data: dict[str, Any], key: str, kind: type, default: Any = None) -> Any:
    if key not in data:
        if default is None:
            raise TaskFormatError(f"{manifest}: field {key!r} is required")
        return default
    value = data[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise TaskFormatError(f"{manifest}: field {key!r} must be {kind.__name__}, got {type(value).__name__}")
    return value


def load_task(task_dir: str | Path, domain: str) -> Task:
    """One task directory as a `Task` of `domain` (gold: the solution written out, then submit)."""
    task_dir = Path(task_dir)
    manifest, data = _manifest(task_dir)
    known = {"id", "prompt", "visible_tests", "split", "timeout_s"}
    extra = sorted(set(data) - known)
    if extra:
        raise TaskFormatError(f"{manifest}: unknown field(s) {extra}; fields are {sorted(known)}")
    prompt = _field(manifest, data, "prompt", str)
    tests = _field(manifest, data, "visible_tests", list)
    tid = _field(manifest, data, "id", str, task_dir.name)
    split = data.get("split")
    if split is not None and split not in SPLITS:
        raise TaskFormatError(f"{manifest}: field 'split' must be one of {SPLITS}, got {split!r}")
    timeout = data.get("timeout_s", 10.0)
    files = _read_tree(task_dir / "repo", manifest, "repo/")
    hidden = {f"hidden/{k}": v for k, v in _read_tree(task_dir / "hidden", manifest, "hidden/").items()}
    fix = _read_tree(task_dir / "solution", manifest, "solution/")
    for t in tests:
        if not isinstance(t, str) or t not in files:
            raise TaskFormatError(f"{manifest}: field 'visible_tests': {t!r} is not a file under repo/")
    if not fix:
        raise TaskFormatError(f"{manifest}: solution/ is empty: the task needs its known fix (the gold response)")
    try:
        ref = make_reference(files, tests, hidden, fix=fix, timeout_s=timeout)
    except ValueError as e:
        raise TaskFormatError(f"{manifest}: {e}") from e
    spec = RepoSpec.from_reference(ref)
    calls = [("write_file", {"path": p, "content": c}) for p, c in sorted(fix.items())] + [("submit", {})]
    gold = render(RepoState.start(Snapshot.of(files)), calls)
    meta = {"snapshot_sha256": spec.snapshot.sha256, "source": str(task_dir)}
    if split:
        meta["split"] = split
    return Task(f"{domain}-{tid}", domain, prompt, ref, gold, meta)


def load_tasks(paths: Sequence[str | Path], domain: str) -> list[Task]:
    """Every task under `paths` (task directories, or directories of them), in path order; ids must be unique."""
    tasks: list[Task] = []
    for p in map(Path, paths):
        if any((p / m).is_file() for m in MANIFESTS):
            tasks.append(load_task(p, domain))
        elif p.is_dir():
            subs = [d for d in sorted(p.iterdir()) if d.is_dir() and any((d / m).is_file() for m in MANIFESTS)]
            if not subs:
                raise TaskFormatError(f"{p}: neither a task directory nor a directory of them (no {MANIFESTS[0]})")
            tasks += [load_task(d, domain) for d in subs]
        else:
            raise TaskFormatError(f"{p}: no such directory")
    seen: dict[str, int] = {}
    for t in tasks:
        seen[t.task_id] = seen.get(t.task_id, 0) + 1
    dup = sorted(k for k, n in seen.items() if n > 1)
    if dup:
        raise TaskFormatError(f"task ids must be unique; repeated: {dup[:5]}")
    return tasks


def write_task_dir(task: Task, task_dir: str | Path) -> Path:
    """Write a repo task in this format (e.g. a generated one, to edit by hand); returns the directory."""
    spec = RepoSpec.from_reference(task.reference)
    root = Path(task_dir)
    for sub, tree in (("repo", spec.snapshot.text()), ("hidden", dict(spec.hidden_tests)), ("solution", spec.fix)):
        for rel, text in tree.items():
            rel = rel.removeprefix("hidden/") if sub == "hidden" else rel
            f = root / sub / rel
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text(text, encoding="utf-8")
    manifest = {"id": task.task_id, "prompt": task.prompt, "visible_tests": list(spec.test_files),
                "timeout_s": spec.timeout_s}
    (root / "task.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return root
