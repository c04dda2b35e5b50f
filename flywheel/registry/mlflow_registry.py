"""The MLflow model registry as the flywheel's source of truth for what is deployed.

Every candidate policy becomes a version of one registered model, with its lineage
as tags. The `champion` alias marks what production serves; it moves only through
the promotion gate (`promote_if_better`) or `rollback`. The sequence of champions is
kept as a JSON list in the registered model's `flywheel.champion_history` tag, so a
rollback knows where to go back to.

A version's MLflow run is the run that trained it (`training_run_id` in its lineage): its
`MODEL_PATH` pointer, lineage and serving manifest (weights too when asked) are logged into
that run's artifacts and the version's source is that folder, so MLflow links the version to
its training run (whose `flywheel.registered_versions` tag lists the versions made from it), and
the same code works against a local SQLite store and a remote `mlflow server`. A version nothing
trained (a base model) has no run on a local store: its source is the checkpoint folder itself; a
server refuses a local path without a run, so there it gets a registration run holding its
`MODEL_PATH` and lineage (experiment `flywheel-registry`). The weights' path is the
`flywheel.model_path` tag.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
import uuid
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from flywheel.evaluation.runner import Comparison
from flywheel.monitoring.weights import weights_hash
from flywheel.registry.gate import GateConfig, PromotionDecision, decide, not_non_inferior
from flywheel.tracking import REGISTRY_EXPERIMENT, ensure_experiment

DEFAULT_MODEL_NAME = "flywheel-policy"
CHAMPION = "champion"
CHALLENGER = "challenger"
"""Alias of a candidate that passed the offline gate and awaits its canary (flywheel.registry.canary)."""
HISTORY_TAG = "flywheel.champion_history"
EVENTS_TAG = "flywheel.champion_events"
WEIGHTS_TAG = "flywheel.weights_sha256"
VERSIONS_TAG = "flywheel.registered_versions"
"""Tag on a training run: the model versions registered from it (`name:version`, comma-separated)."""


@dataclass(frozen=True)
class ModelRef:
    """One registered version: `name:version` is the model id production logs carry."""

    name: str
    version: str
    model_path: str
    tags: dict[str, str] = field(default_factory=dict)

    @property
    def uri(self) -> str:
        return f"{self.name}:{self.version}"

    @property
    def base_model(self) -> str:
        return self.tags.get("flywheel.base_model", "")

    @property
    def is_base(self) -> bool:
        return self.tags.get("flywheel.role") == "base"


def snapshot_checkpoint(src: Path, root: Path) -> Path:
    """An immutable copy of checkpoint folder `src` under `root`.

    A real copy, not hard links: `save_pretrained` truncates and rewrites the same file names,
    which would change a hard-linked snapshot too.
    """

    root.mkdir(parents=True, exist_ok=True)
    dst = root / f"{src.name}-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{uuid.uuid4().hex[:6]}"
    shutil.copytree(src, dst)
    return dst


def store_root(tracking_uri: str) -> Path | None:
    """The folder of a local SQLite store (`$FLYWHEEL_HOME` for the home's `mlflow.db`); None for a server."""
    if tracking_uri.startswith("sqlite:///"):
        return Path(tracking_uri[len("sqlite:///"):]).resolve().parent
    return None


def stored_path(tracking_uri: str, path: str) -> str:
    """What a version's `flywheel.model_path` tag records for the folder `path`: relative to the local store's
    folder when inside it (so a home moved with its `mlflow.db` still finds its models), else as given."""
    root = store_root(tracking_uri)
    p = Path(path)
    if root is None or not p.is_absolute() or not p.is_relative_to(root):
        return path
    return p.relative_to(root).as_posix()


def local_path(tracking_uri: str, stored: str) -> str:
    """The folder a `flywheel.model_path` tag names (`stored_path` undone against this store's folder)."""
    root = store_root(tracking_uri)
    if not stored or root is None or Path(stored).is_absolute():
        return stored
    return str(root / stored)


class Registry:
    """A registered model in an MLflow registry (SQLite file or server), with the champion alias.

    Checkpoint folders inside a local store's folder (the home) are recorded relative to it (`stored_path`) and
    read back against wherever the store is now (`ModelRef.model_path` is always a usable path)."""

    def __init__(self, tracking_uri: str, name: str = DEFAULT_MODEL_NAME, artifact_location: str | None = None):
        from mlflow import MlflowClient  # heavy: mlflow loads only where a run is logged

        self.tracking_uri = tracking_uri
        self.name = name
        self.artifact_location = artifact_location
        self.client = MlflowClient(tracking_uri=tracking_uri, registry_uri=tracking_uri)
        self._ensure_model()

    def _ensure_model(self) -> None:
        from mlflow.exceptions import MlflowException  # heavy: mlflow loads only where a run is logged

        try:
            self.client.get_registered_model(self.name)
        except MlflowException:
            try:
                self.client.create_registered_model(
                    self.name, description="Policies trained by the flywheel; alias `champion` = what production serves.")
            except MlflowException:  # created concurrently
                self.client.get_registered_model(self.name)

    def _experiment_id(self) -> str:
        return ensure_experiment(self.client, REGISTRY_EXPERIMENT, self.artifact_location)

    @property
    def is_remote(self) -> bool:
        """A tracking server (which needs a run to hold a version's local files), not a local store."""
        return self.tracking_uri.startswith(("http://", "https://", "databricks"))

    # ---- versions -----------------------------------------------------------------
    def register(
        self, model_path: str | Path, lineage: Mapping[str, Any] | None = None,
        serving: Mapping[str, Any] | None = None, log_weights: bool = False, role: str = "candidate",
        snapshot_root: str | Path | None = None,
    ) -> ModelRef:
        """A new version for the policy at `model_path`, its lineage as `flywheel.*` tags.

        `lineage` keys: base_model, log_partitions, training_run_id, eval_run_id, ... (values
        stringified; lists as JSON); with a `training_run_id`, that run is the version's source run.
        `serving`: the vLLM manifest, logged as an artifact. `snapshot_root`: copy the checkpoint
        folder there first, so the version keeps its weights when the trainer later overwrites
        `model_path`.
        """
        src = Path(str(model_path))
        if snapshot_root is not None and src.is_dir():
            model_path = snapshot_checkpoint(src, Path(snapshot_root))
        model_path = str(Path(model_path).resolve()) if Path(str(model_path)).exists() else str(model_path)
        tags = {"flywheel.role": role, "flywheel.model_path": stored_path(self.tracking_uri, model_path),
                "flywheel.source_path": stored_path(self.tracking_uri, str(src.resolve()) if src.exists() else str(src))}
        if Path(model_path).is_dir() and (digest := weights_hash(model_path)):
            tags[WEIGHTS_TAG] = digest  # what a server must load for this version (flywheel.monitoring.weights)
        from flywheel.rollout.adapters import adapter_lineage  # a LoRA adapter: its base model, rank

        for k, v in {**adapter_lineage(model_path), **(lineage or {})}.items():
            if v is None:
                continue
            tags[f"flywheel.{k}"] = v if isinstance(v, str) else json.dumps(v, sort_keys=True, default=str)
        if not tags.get("flywheel.training_run_id") and not self.is_remote:  # nothing to link: no run at all
            mv = self.client.create_model_version(self.name, source=Path(model_path).resolve().as_uri(), tags=tags,
                                                  description=f"{role} from {tags.get('flywheel.base_model', '?')}")
            self._wait_ready(mv.version)
            return ModelRef(self.name, str(mv.version), model_path, dict(tags))
        run_id, artifact_path = self._source_run(tags, Path(model_path).name)
        with tempfile.TemporaryDirectory() as tmp:
            d = Path(tmp) / "model"
            d.mkdir()
            (d / "MODEL_PATH").write_text(tags["flywheel.model_path"] + "\n")
            (d / "lineage.json").write_text(json.dumps(tags, indent=1, sort_keys=True))
            if serving is not None:
                (d / "serving.json").write_text(json.dumps(serving, indent=2))
            self.client.log_artifacts(run_id, str(d), artifact_path=artifact_path)
            if log_weights and Path(model_path).is_dir():
                self.client.log_artifacts(run_id, model_path, artifact_path=f"{artifact_path}/weights")
        mv = self.client.create_model_version(
            self.name, source=f"runs:/{run_id}/{artifact_path}", run_id=run_id, tags=tags,
            description=f"{role} from {tags.get('flywheel.base_model', '?')}")
        self._wait_ready(mv.version)
        if tags.get("flywheel.training_run_id"):
            self._list_on_run(run_id, f"{self.name}:{mv.version}")
        return ModelRef(self.name, str(mv.version), model_path, dict(tags))

    def _list_on_run(self, run_id: str, uri: str) -> None:
        """Add `uri` to the training run's `flywheel.registered_versions` tag (the run page shows the versions too)."""
        listed = self.client.get_run(run_id).data.tags.get(VERSIONS_TAG, "")
        self.client.set_tag(run_id, VERSIONS_TAG, ", ".join([*filter(None, listed.split(", ")), uri]))

    def _source_run(self, tags: Mapping[str, str], name: str) -> tuple[str, str]:
        """(run, artifact folder) a new version's source lives in: the training run when there is one
        (a folder per registration: one run may be registered more than once), else (a server) a
        registration run."""
        training = tags.get("flywheel.training_run_id")
        if training:
            return training, f"registered/{name}-{uuid.uuid4().hex[:6]}"
        run = self.client.create_run(self._experiment_id(), run_name=f"register-{name}",
                                     tags={"flywheel.kind": "registration", **tags})
        self.client.set_terminated(run.info.run_id)
        return run.info.run_id, "model"

    def log_version_artifact(self, version: str | int, path: str | Path) -> None:
        """Log the file `path` beside version `version`'s `MODEL_PATH` (in its source run's folder; a run-less
        version: into its checkpoint folder, unless a file of that name is there already)."""
        mv = self.client.get_model_version(self.name, str(version))
        if not mv.run_id:  # a run-less version's source is the checkpoint folder itself
            folder_path = Path(local_path(self.tracking_uri, mv.tags.get("flywheel.model_path", "")))
            if folder_path.is_dir() and not (folder_path / Path(path).name).exists():
                shutil.copy(path, folder_path / Path(path).name)
            return
        folder = mv.source.split(f"runs:/{mv.run_id}/", 1)[-1] if mv.source.startswith("runs:/") else "model"
        self.client.log_artifact(mv.run_id, str(path), folder)

    def _wait_ready(self, version: str, timeout_s: float = 30.0) -> None:
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            if self.client.get_model_version(self.name, version).status == "READY":
                return
            time.sleep(0.2)
        raise TimeoutError(f"model version {self.name}:{version} not READY after {timeout_s}s")

    def get(self, version: str | int) -> ModelRef:
        mv = self.client.get_model_version(self.name, str(version))
        return ModelRef(self.name, str(mv.version), local_path(self.tracking_uri, mv.tags.get("flywheel.model_path", "")),
                        dict(mv.tags))

    def set_tags(self, version: str | int, tags: Mapping[str, Any]) -> None:
        for k, v in tags.items():
            self.client.set_model_version_tag(self.name, str(version), k, v if isinstance(v, str) else json.dumps(v))

    def versions(self) -> list[ModelRef]:
        mvs = self.client.search_model_versions(f"name='{self.name}'")
        return sorted((self.get(m.version) for m in mvs), key=lambda r: int(r.version))

    # ---- champion alias -------------------------------------------------------------
    def _alias(self, alias: str) -> ModelRef | None:
        from mlflow.exceptions import MlflowException  # heavy: mlflow loads only where a run is logged

        try:
            mv = self.client.get_model_version_by_alias(self.name, alias)
        except MlflowException:
            return None
        return self.get(mv.version)

    def champion(self) -> ModelRef | None:
        return self._alias(CHAMPION)

    def challenger(self) -> ModelRef | None:
        """The version awaiting its canary (alias `challenger`), None when none does."""
        return self._alias(CHALLENGER)

    def set_challenger(self, version: str | int, reason: str = "") -> None:
        """Point `challenger` at `version` (recorded in the events; the champion history is unchanged)."""
        self.client.set_registered_model_alias(self.name, CHALLENGER, str(version))
        self._record(self.history(), "challenger", str(version), reason)

    def clear_challenger(self) -> None:
        """Remove the `challenger` alias (no-op without one)."""
        if self.challenger() is not None:
            self.client.delete_registered_model_alias(self.name, CHALLENGER)

    def history(self) -> list[str]:
        tags = self.client.get_registered_model(self.name).tags
        return json.loads(tags.get(HISTORY_TAG, "[]"))

    def _record(self, history: list[str], action: str, version: str, reason: str) -> None:
        self.client.set_registered_model_tag(self.name, HISTORY_TAG, json.dumps(history[-200:]))
        events = json.loads(self.client.get_registered_model(self.name).tags.get(EVENTS_TAG, "[]"))
        events.append({"action": action, "version": version, "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                       "reason": reason[:200]})
        self.client.set_registered_model_tag(self.name, EVENTS_TAG, json.dumps(events[-20:]))

    def set_champion(self, version: str | int, reason: str = "", action: str = "promote") -> None:
        version = str(version)
        self.client.set_registered_model_alias(self.name, CHAMPION, version)
        self._record([*self.history(), version], action, version, reason)

    def ensure_champion(self, base_model_path: str | Path, base_model: str,
                        serving: Mapping[str, Any] | None = None,
                        snapshot_root: str | Path | None = None) -> ModelRef:
        """The current champion; with none yet, the base model is registered and becomes the implicit champion."""
        champ = self.champion()
        if champ is not None:
            return champ
        ref = self.register(base_model_path, {"base_model": base_model}, serving=serving, role="base",
                            snapshot_root=snapshot_root)
        self.set_champion(ref.version, reason=f"base model {base_model} is the implicit first champion",
                          action="init")
        return ref


def promote_if_better(
    registry: Registry, candidate: ModelRef, comparison: Comparison | None, gate: GateConfig | None = None,
) -> PromotionDecision:
    """Move `champion` to `candidate` if the gate passes; record the decision on the candidate either way."""
    gate = gate or GateConfig()
    before = registry.champion()
    promote, reason = decide(comparison, gate)
    if promote:
        registry.set_champion(candidate.version, reason=reason)
    registry.set_tags(candidate.version, {"flywheel.promoted": str(promote).lower(), "flywheel.gate_reason": reason[:4000],
                                          "flywheel.gate": json.dumps(gate.to_dict())})
    after = registry.champion()
    overall = comparison.diffs["overall"].value if comparison else None
    failing = not_non_inferior(comparison, gate) if comparison else ()
    return PromotionDecision(promote, reason, candidate.uri, before.uri if before else None,
                             after.uri if after else None, overall, failing)


@dataclass(frozen=True)
class RollbackResult:
    from_version: str | None
    to_version: str
    history: list[str]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def rollback(registry: Registry, to_version: str | int | None = None, why: str = "") -> RollbackResult:
    """Move `champion` back to the previous champion (or to `to_version`), keeping the history consistent.

    Without `to_version` the current champion is popped off the history. With it, the
    history is cut back to that version's last appearance (or the version is appended,
    if it never was champion). `why` goes into the recorded event.
    """
    current = registry.champion()
    hist = registry.history()
    if to_version is None:
        if len(hist) < 2:
            raise ValueError(f"no previous champion to roll back to (history: {hist})")
        hist = hist[:-1]
        target = hist[-1]
    else:
        target = str(to_version)
        registry.get(target)  # raises if the version does not exist
        if target in hist:
            hist = hist[: len(hist) - hist[::-1].index(target)]
        else:
            hist = [*hist, target]
    registry.client.set_registered_model_alias(registry.name, CHAMPION, target)
    reason = f"rollback from {current.version if current else None} to {target}" + (f": {why}" if why else "")
    registry._record(hist, "rollback", target, reason)
    return RollbackResult(current.version if current else None, target, hist)


def _champion_tags(tracking_uri: str, name: str) -> tuple[str, dict[str, str]] | None:
    """(version, tags) of the `champion` alias, read without creating anything; None without one."""
    from mlflow import MlflowClient  # heavy: mlflow loads only where a run is logged
    from mlflow.exceptions import MlflowException

    try:
        mv = MlflowClient(tracking_uri=tracking_uri, registry_uri=tracking_uri).get_model_version_by_alias(name, CHAMPION)
    except MlflowException:  # no registered model or no champion yet
        return None
    return str(mv.version), dict(mv.tags)


def champion_base_model(tracking_uri: str, name: str = DEFAULT_MODEL_NAME) -> str | None:
    """The base model the current champion was trained from (None without a registry or champion)."""
    champ = _champion_tags(tracking_uri, name)
    return (champ[1].get("flywheel.base_model") or None) if champ else None


def training_start(tracking_uri: str, base_model: str, base_path: str, init_from: str = "champion",
                   name: str = DEFAULT_MODEL_NAME) -> tuple[str, str]:
    """(checkpoint folder, what it is) a turn trains from: the champion when it descends from `base_model`
    (so turns compound; `init_from` champion or rebase, where the champion samples and the base trains), else
    the base model's own checkpoint."""
    champ = _champion_tags(tracking_uri, name) if init_from in ("champion", "rebase") else None
    if champ is not None:
        version, tags = champ
        path = local_path(tracking_uri, tags.get("flywheel.model_path", ""))
        if tags.get("flywheel.base_model") == base_model and path and Path(path).is_dir():
            return path, f"{name}:{version} (the champion)"
    return base_path, f"base model {base_model}"
