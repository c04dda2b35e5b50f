"""Deploy one candidate: register it with its lineage, write its vLLM manifest, run the promotion gate."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flywheel.gpu import GpuSpec
from flywheel.paths import FlywheelPaths
from flywheel.registry.candidate import load_candidate_eval
from flywheel.registry.gate import GateConfig, PromotionDecision
from flywheel.registry.mlflow_registry import DEFAULT_MODEL_NAME, ModelRef, Registry, promote_if_better
from flywheel.registry.serving import serving_manifest, write_serving_manifest


@dataclass(frozen=True)
class DeploymentResult:
    """The registered candidate, the gate's decision, and what production serves now."""

    candidate: ModelRef
    decision: PromotionDecision
    champion: ModelRef
    serving_paths: dict[str, str]

    def serve_command(self, variant: str = "default") -> str:
        """The `vllm serve ...` line of the candidate's manifest."""
        return json.loads(Path(self.serving_paths["json"]).read_text())["variants"][variant]["command"]

    def to_dict(self) -> dict[str, Any]:
        return {"candidate": self.candidate.uri, "champion": self.champion.uri,
                "champion_model_path": self.champion.model_path, "promoted": self.decision.promoted,
                "reason": self.decision.reason, "decision": self.decision.to_dict(),
                "serving": self.serving_paths}


def deploy_candidate(
    candidate_path: str | Path, base_model: str, eval_dir: str | Path, paths: FlywheelPaths,
    log_partitions: Sequence[str] = (), training_run_id: str | None = None,
    gate: GateConfig | None = None, gpu: GpuSpec | None = None, model_name: str = DEFAULT_MODEL_NAME,
    extra_lineage: Mapping[str, Any] | None = None,
) -> DeploymentResult:
    """Register the candidate evaluated in `eval_dir` (its MLflow source run: `training_run_id`),
    and promote it if it beat the champion it was compared to.

    If the champion moved since that evaluation (another base model's run promoted in
    between), the comparison is stale: the candidate is registered but not promoted.
    """
    paths = paths.ensure()
    reg = Registry(paths.mlflow_uri, model_name, artifact_location=paths.mlflow_artifacts.as_uri())
    ev = load_candidate_eval(eval_dir)
    lineage = {"base_model": base_model, "log_partitions": list(log_partitions), "training_run_id": training_run_id,
               "eval_run_id": ev.eval_run_id, "eval_pass_rates": ev.candidate.pass_rates(),
               "champion_pass_rates": ev.champion.pass_rates(), "compared_to": ev.champion_uri, **dict(extra_lineage or {})}
    ref = reg.register(candidate_path, lineage, snapshot_root=paths.models / "registry")
    manifest = serving_manifest(ref.model_path, ref.uri, gpu)
    written = write_serving_manifest(Path(ref.model_path), manifest)
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "serving.json"
        p.write_text(json.dumps(manifest, indent=2))
        reg.log_version_artifact(ref.version, p)
    current = reg.champion()
    if current is not None and current.uri != ev.champion_uri:
        reason = (f"kept {current.uri}: the champion changed since this candidate was evaluated against "
                  f"{ev.champion_uri}; re-run eval_report for {base_model}")
        reg.set_tags(ref.version, {"flywheel.promoted": "false", "flywheel.gate_reason": reason})
        decision = PromotionDecision(False, reason, ref.uri, current.uri, current.uri)
    else:
        decision = promote_if_better(reg, ref, ev.comparison, gate)
    champ = reg.champion()
    assert champ is not None
    return DeploymentResult(ref, decision, champ, {k: str(v) for k, v in written.items()})


def champion_regression(
    tracking_uri: str, model_name: str = DEFAULT_MODEL_NAME, tolerance: float = 0.05,
) -> tuple[bool, dict[str, Any]]:
    """Is the champion served now worse than the base model it replaced, beyond `tolerance`, in any domain?

    Reads the pass rates recorded on the versions at evaluation time. True = no regression.
    A rollback or a manual alias move is how a regressed champion gets served.
    """
    reg = Registry(tracking_uri, model_name)
    champ = reg.champion()
    if champ is None:
        return True, {"reason": "no champion yet"}
    bases = [v for v in reg.versions() if v.is_base and v.base_model == champ.base_model] or \
            [v for v in reg.versions() if v.is_base]
    mine = json.loads(champ.tags.get("flywheel.eval_pass_rates", "{}"))
    ref = json.loads(bases[0].tags.get("flywheel.eval_pass_rates", "{}")) if bases else {}
    drops = {d: round(ref[d] - v, 4) for d, v in mine.items() if d in ref and ref[d] - v > tolerance}
    return not drops, {"champion": champ.uri, "baseline": bases[0].uri if bases else None,
                       "champion_pass_rates": mine, "baseline_pass_rates": ref, "drops": drops,
                       "tolerance": tolerance}
