"""MLflow telemetry of a training run: params, per-step metrics, the reward-curve PNG.

Local SQLite store by default (`FlywheelPaths.mlflow_uri`, artifacts under
`paths.mlflow_artifacts`); a resumed run continues the same MLflow run. `enabled=False`
keeps everything in memory (the metric history still feeds the curve).

MLflow 3's UI groups charts into sections by the key's prefix before the last `/`, sorts the
sections alphabetically and puts keys without a `/` last ("Model metrics"); the order metrics were
logged in does not count. So the headline metrics get keys whose sections sort first
(`mlflow_key`): `1_reward/mean`, `1_reward/mean_<domain>`, `2_pass_rate/mean`, ... The in-memory
history keeps the trainer's own names.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from flywheel.tracking import EXPERIMENT_DESCRIPTIONS, TRAINING_EXPERIMENT, ensure_experiment, ui_base
from flywheel.tracking import run_url as ui_run_url

DEFAULT_EXPERIMENT = TRAINING_EXPERIMENT

HEADLINE_KEYS = {"reward/mean": "1_reward/mean", "reward/std": "1_reward/std", "reward_mean/": "1_reward/mean_",
                 "reward_std/": "1_reward/std_", "pass_rate": "2_pass_rate/mean", "pass_rate/": "2_pass_rate/mean_",
                 "kept_rate": "2_pass_rate/kept_share", "rft/loss": "1_rft/loss", "rft/lr": "1_rft/lr",
                 "rft/epoch": "1_rft/epoch"}
"""The trainers' names of reward and pass rate (a trailing `/`: per domain), and RFT's per-step fine-tuning
curves and kept share -> MLflow keys whose chart sections sort first in the MLflow UI."""


def mlflow_key(name: str) -> str:
    """The MLflow key of the trainer's metric `name`: headline metrics renamed so they chart first,
    `@` spelled `_at_` (MLflow refuses it), everything else as it is."""
    if name in HEADLINE_KEYS:
        return HEADLINE_KEYS[name]
    head, sep, tail = name.partition("/")
    if sep and f"{head}/" in HEADLINE_KEYS and "/" not in tail:
        return HEADLINE_KEYS[f"{head}/"] + tail
    return name.replace("@", "_at_")


class Telemetry:
    """One MLflow run, opened by `start` and closed by `finish`."""

    def __init__(
        self,
        tracking_uri: str | None,
        experiment: str = DEFAULT_EXPERIMENT,
        artifact_root: Path | None = None,
        enabled: bool = True,
        ui_url: str = "",
    ) -> None:
        self.enabled = enabled and tracking_uri is not None
        self.tracking_uri = tracking_uri
        self.experiment = experiment
        self.artifact_root = artifact_root
        self.ui_url = ui_url
        self.run_id: str | None = None
        self.experiment_id: str | None = None
        self._client: Any = None

    def start(self, run_name: str, params: Mapping[str, Any], run_id: str | None = None, tags: Mapping[str, str] | None = None) -> str | None:
        """Open a new run (or reopen `run_id` on resume) and log `params` once."""
        if not self.enabled:
            return None
        from mlflow.tracking import MlflowClient  # heavy: mlflow loads only where a run is logged

        self._client = MlflowClient(self.tracking_uri)
        self.experiment_id = ensure_experiment(
            self._client, self.experiment, self.artifact_root.resolve().as_uri() if self.artifact_root else None,
            description=EXPERIMENT_DESCRIPTIONS[TRAINING_EXPERIMENT])
        if run_id:
            self._client.update_run(run_id, status="RUNNING")
            self.run_id = run_id
            return run_id
        run = self._client.create_run(self.experiment_id, run_name=run_name, tags=dict(tags or {}))
        self.run_id = run.info.run_id
        from mlflow.entities import Param  # heavy: mlflow loads only where a run is logged

        items = [Param(str(k)[:250], str(v)[:6000]) for k, v in params.items()]
        for i in range(0, len(items), 90):
            self._client.log_batch(self.run_id, params=items[i : i + 90])
        return self.run_id

    def log_metrics(self, step: int, metrics: Mapping[str, float]) -> None:
        if not self.enabled or not self.run_id:
            return
        from mlflow.entities import Metric  # heavy: mlflow loads only where a run is logged

        ts = int(time.time() * 1000)
        items = [Metric(mlflow_key(k), float(v), ts, step) for k, v in metrics.items() if _finite(v)]
        for i in range(0, len(items), 900):
            self._client.log_batch(self.run_id, metrics=items[i : i + 900])

    def log_artifact(self, path: Path, subdir: str | None = None) -> None:
        if self.enabled and self.run_id:
            self._client.log_artifact(self.run_id, str(path), subdir)

    def log_dict(self, obj: Any, name: str) -> None:
        if self.enabled and self.run_id:
            self._client.log_text(self.run_id, json.dumps(obj, indent=1, sort_keys=True, default=str), name)

    def finish(self, status: str = "FINISHED") -> None:
        if self.enabled and self.run_id:
            self._client.set_terminated(self.run_id, status=status)

    def run_url(self) -> str | None:
        """The run's page in the MLflow UI (`ui_url`, else the tracking server, else `make mlflow`'s address)."""
        if not self.run_id or not self.experiment_id:
            return None
        return ui_run_url(ui_base(self.tracking_uri or "", self.ui_url), self.experiment_id, self.run_id)


def _finite(v: Any) -> bool:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return False
    return f == f and f not in (float("inf"), float("-inf"))


def plot_reward_curve(history: Sequence[Mapping[str, float]], path: Path, title: str = "RLVR reward") -> Path:
    """Mean reward per step (overall and per domain) and pass rate, as a PNG (matplotlib Agg)."""
    import matplotlib  # heavy: only for the curve

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # heavy: only a chart loads matplotlib

    fig, ax = plt.subplots(figsize=(6.4, 3.6), dpi=100)
    steps = [h["step"] for h in history]
    ax.plot(steps, [h.get("reward/mean", float("nan")) for h in history], label="reward (all)", lw=2)
    domains = sorted({k.split("/")[1] for h in history for k in h if k.startswith("reward_mean/")})
    for d in domains:
        ax.plot(steps, [h.get(f"reward_mean/{d}", float("nan")) for h in history], label=f"reward {d}", lw=1, alpha=0.8)
    ax.set_xlabel("step")
    ax.set_ylabel("mean reward")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def gpu_metrics() -> dict[str, float]:
    """GPU utilization and memory where a CUDA GPU exists; {} elsewhere."""
    try:
        import torch  # heavy: the storage resource imports this module without training anything

        if not torch.cuda.is_available():
            return {}
        out = {
            "gpu/mem_allocated_gb": torch.cuda.memory_allocated() / 2**30,
            "gpu/mem_max_allocated_gb": torch.cuda.max_memory_allocated() / 2**30,
        }
        try:
            out["gpu/utilization"] = float(torch.cuda.utilization())
        except Exception:  # pynvml missing: memory is still worth logging
            pass
        return out
    except Exception:
        return {}
