"""The reproducibility manifest every training and evaluation run records.

Seeds, package versions (torch, transformers, vllm, deepspeed, ...), the sandbox that
judged the rewards (the project's own local sandbox: Linux namespaces and rlimits set up by
`flywheel/sandbox/_isolate*.py`, no external tool; recorded as a hash of that code and the
kernel it ran on), the exact data partitions, the git commit of the code, and the machine.
Logged as MLflow params (`manifest.*`) and as a JSON artifact.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import platform
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch

PACKAGES = ("torch", "transformers", "tokenizers", "vllm", "deepspeed", "mlflow", "dagster", "duckdb", "math-verify")


def package_versions(names: tuple[str, ...] = PACKAGES) -> dict[str, str]:
    out = {}
    for n in names:
        try:
            out[n] = importlib.metadata.version(n)
        except importlib.metadata.PackageNotFoundError:
            out[n] = "absent"
    return out


def _run(cmd: list[str], cwd: Path | None = None) -> str:
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=5, cwd=cwd)
        return (r.stdout or r.stderr).strip().splitlines()[0] if r.returncode == 0 else "unknown"
    except (OSError, subprocess.SubprocessError, IndexError):
        return "unknown"


def sandbox_version() -> str:
    """The local sandbox as it ran: `flywheel-local <sha256 of its code> kernel <release>`.

    The isolation is the project's own code (namespaces, rlimits, private tmpfs), so its
    version is a hash of those files; the kernel decides what the namespaces can do.
    """
    spec = importlib.util.find_spec("flywheel.sandbox")
    folder = Path(next(iter(spec.submodule_search_locations or []))) if spec else None
    digest = hashlib.sha256()
    for f in sorted(folder.glob("*.py")) if folder else []:
        digest.update(f.name.encode() + b"\0" + f.read_bytes())
    return f"flywheel-local {digest.hexdigest()[:12]} kernel {platform.release()}"


def git_commit() -> str:
    return _run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).resolve().parent)


def snapshot_digest(tasks: Sequence[Any]) -> dict[str, Any]:
    """The starting snapshots of the run's repository tasks (`reference["snapshot_sha256"]`): how many, and one
    sha256 over the sorted (task id, snapshot hash) pairs, so two runs on byte-identical repositories match."""
    pairs = sorted((str(t.task_id), str(ref["snapshot_sha256"])) for t in tasks
                   if isinstance(ref := getattr(t, "reference", None), dict) and ref.get("snapshot_sha256"))
    if not pairs:
        return {}
    digest = hashlib.sha256("\n".join(f"{i}\t{h}" for i, h in pairs).encode()).hexdigest()
    return {"data.repo_snapshots": len(pairs), "data.repo_snapshots_sha256": digest}


def build_manifest(
    seeds: Mapping[str, int],
    data_partitions: Mapping[str, Any] | None = None,
    device: str = "cpu",
    extra: Mapping[str, Any] | None = None,
    tasks: Sequence[Any] = (),
) -> dict[str, Any]:
    """A flat, JSON-able description of what produced a run (`tasks`: its tasks, for the repository snapshots)."""

    m: dict[str, Any] = {f"seed.{k}": int(v) for k, v in seeds.items()}
    m.update({f"version.{k}": v for k, v in package_versions().items()})
    m["sandbox"] = sandbox_version()
    m["git_commit"] = git_commit()
    m["python"] = platform.python_version()
    m["platform"] = platform.platform()
    m["device"] = device
    if device.startswith("cuda") and torch.cuda.is_available():
        m["gpu"] = torch.cuda.get_device_name(0)
    for k, v in (data_partitions or {}).items():
        m[f"data.{k}"] = v if isinstance(v, (str, int, float)) else str(v)
    m.update(snapshot_digest(tasks))
    for k, v in (extra or {}).items():
        m[k] = v
    return m
