"""Checkpoints that make a crashed run resumable with bitwise-identical results.

One checkpoint is a folder `step_<N>/` holding the backend's state (weights, optimizer,
LR scheduler; a DeepSpeed checkpoint for that backend) and `trainer_state.pt`: the step,
RNG states (python, numpy, torch, CUDA), the scheduler's running pass rates, the metric
history, the MLflow run id, and (pipelined runs) the rollouts already generated for the
next step. A checkpoint is written to a temporary folder and renamed, and `latest`
names the newest complete one, so a crash mid-write never leaves a half checkpoint
that resume would pick.
"""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch


def rng_state() -> dict[str, Any]:
    state: dict[str, Any] = {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_checkpoint(run_dir: Path, step: int, backend: Any, trainer_state: dict[str, Any], keep: int = 2) -> Path:
    """Write checkpoint `step` (the number of completed updates) under `run_dir`; prune to `keep`."""
    run_dir.mkdir(parents=True, exist_ok=True)
    final = run_dir / f"step_{step:06d}"
    tmp = run_dir / f".tmp_step_{step:06d}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    backend.save(tmp)
    torch.save({**trainer_state, "step": step, "rng": rng_state()}, tmp / "trainer_state.pt")
    shutil.rmtree(final, ignore_errors=True)
    os.replace(tmp, final)
    latest_tmp = run_dir / ".latest.tmp"
    latest_tmp.write_text(final.name)
    os.replace(latest_tmp, run_dir / "latest")
    olds = sorted(p for p in run_dir.glob("step_*") if p.is_dir())
    for p in olds[:-keep] if keep > 0 else []:
        shutil.rmtree(p, ignore_errors=True)
    return final


def latest_checkpoint(run_dir: Path) -> Path | None:
    """The newest complete checkpoint of a run, or None."""
    marker = run_dir / "latest"
    if not marker.exists():
        return None
    path = run_dir / marker.read_text().strip()
    return path if (path / "trainer_state.pt").exists() else None


def load_checkpoint(path: Path, backend: Any) -> dict[str, Any]:
    """Restore the backend from `path` and return the trainer state (RNG already restored)."""
    backend.load(path)
    state = torch.load(path / "trainer_state.pt", map_location="cpu", weights_only=False)
    set_rng_state(state["rng"])
    return state
