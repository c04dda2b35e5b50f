"""Deploy one candidate: register it with its lineage, write its vLLM manifest, run the promotion gate."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flywheel.gpu import GpuSpec
from flywheel.monitoring.canary import CanaryVerdict
from flywheel.monitoring.sequential import RollbackConfig, RollbackDecision, decide_rollback
from flywheel.monitoring.sources import live_counts
from flywheel.monitoring.weights import weights_hash
from flywheel.paths import FlywheelPaths
from flywheel.registry.canary import stage_challenger
from flywheel.registry.candidate import load_candidate_eval
from flywheel.registry.gate import GateConfig, PromotionDecision
from flywheel.registry.mlflow_registry import (
    DEFAULT_MODEL_NAME,
    WEIGHTS_TAG,
    ModelRef,
    Registry,
    RollbackResult,
    promote_if_better,
    rollback,
)
from flywheel.registry.serving import serving_manifest, write_serving_manifest
from flywheel.tasks.world_suites import suite_of

PROMISE_TAG = "flywheel.eval_pass_rate_lows"
"""Tag on a version: its evaluation's per-domain lower bound of pass@1, what the rollback test holds it to."""
ROLLED_BACK_TAG = "flywheel.rolled_back"
"""Tag on a version the rollback sensor moved `champion` away from: why (the lineage keeps it)."""


@dataclass(frozen=True)
class DeploymentResult:
    """The registered candidate, the gate's decision, and what production serves now."""

    candidate: ModelRef
    decision: PromotionDecision
    champion: ModelRef
    serving_paths: dict[str, str]
    challenger: str | None = None  # the candidate's uri when it passed the offline gate and awaits its canary

    def serve_command(self, variant: str = "default") -> str:
        """The `vllm serve ...` line of the candidate's manifest."""
        return json.loads(Path(self.serving_paths["json"]).read_text())["variants"][variant]["command"]

    def to_dict(self) -> dict[str, Any]:
        return {"candidate": self.candidate.uri, "champion": self.champion.uri,
                "champion_model_path": self.champion.model_path, "promoted": self.decision.promoted,
                "reason": self.decision.reason, "decision": self.decision.to_dict(),
                "serving": self.serving_paths, "challenger": self.challenger}


def deploy_candidate(
    candidate_path: str | Path, base_model: str, eval_dir: str | Path, paths: FlywheelPaths,
    log_partitions: Sequence[str] = (), training_run_id: str | None = None,
    gate: GateConfig | None = None, gpu: GpuSpec | None = None, model_name: str = DEFAULT_MODEL_NAME,
    extra_lineage: Mapping[str, Any] | None = None, canary: CanaryVerdict | None = None,
    challenger: bool = False,
) -> DeploymentResult:
    """Register the candidate evaluated in `eval_dir` (its MLflow source run: `training_run_id`),
    and promote it if it beat the champion it was compared to.

    If the champion moved since that evaluation (another base model's run promoted in
    between), the comparison is stale: the candidate is registered but not promoted. With a `canary` (the
    candidate's paired live outcomes in shadow beside the champion), promotion also needs the canary to pass:
    a candidate that wins offline but loses on live traffic stays registered, not promoted. With `challenger`
    (two-phase promotion, `flywheel.registry.canary`), a candidate that passes the gate becomes the `challenger`
    and the champion stays until `settle_challenger` judges its canary.
    """
    paths = paths.ensure()
    reg = Registry(paths.mlflow_uri, model_name, artifact_location=paths.mlflow_artifacts.as_uri())
    ev = load_candidate_eval(eval_dir)
    lineage = {"base_model": base_model, "log_partitions": list(log_partitions), "training_run_id": training_run_id,
               "eval_run_id": ev.eval_run_id, "eval_pass_rates": ev.candidate.pass_rates(),
               PROMISE_TAG.removeprefix("flywheel."): promise_of(ev.candidate),
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
    elif canary is not None and not canary.passed:
        reason = f"kept {current.uri if current else None}: {canary.reason}"
        reg.set_tags(ref.version, {"flywheel.promoted": "false", "flywheel.gate_reason": reason})
        decision = PromotionDecision(False, reason, ref.uri, current.uri if current else None,
                                     current.uri if current else None)
    elif challenger:
        decision = stage_challenger(reg, ref, ev.comparison, gate)
    else:
        decision = promote_if_better(reg, ref, ev.comparison, gate)
    if canary is not None:
        reg.set_tags(ref.version, {"flywheel.canary": canary.to_dict()})
    champ = reg.champion()
    assert champ is not None
    staged = reg.challenger()
    return DeploymentResult(ref, decision, champ, {k: str(v) for k, v in written.items()},
                            staged.uri if staged is not None and staged.version == ref.version else None)


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


def promise_of(report: Any) -> dict[str, float]:
    """What a version promises production, per domain: its evaluation's lower confidence bound of pass@1 (the
    rollback test's promise; a point estimate from 24 tasks would promise more than it can keep)."""
    lows = {d: round(m["pass@1"].lo, 4) for d, m in report.metrics.items() if suite_of(d) == "heldout"}
    lows.update({d.partition("/")[2]: round(m["pass@1"].lo, 4) for d, m in report.metrics.items()
                 if suite_of(d) == "production"})  # production's own suite, where it has one, is what it promises
    lows.pop("overall", None)
    return lows




def rollback_champion(tracking_uri: str, why: str, model_name: str = DEFAULT_MODEL_NAME) -> RollbackResult:
    """Move `champion` back to the previous champion because of `why`: recorded in the champion history's
    event and as a tag on the version rolled back from."""
    reg = Registry(tracking_uri, model_name)
    current = reg.champion()
    result = rollback(reg, why=why)
    if current is not None:
        reg.set_tags(current.version, {ROLLED_BACK_TAG: why[:4000]})
    return result


def served_weights_match(tracking_uri: str, served: Mapping[str, str | None],
                         model_name: str = DEFAULT_MODEL_NAME) -> tuple[bool, dict[str, Any]]:
    """Do the champion's weights match the fingerprint registered with it: its folder now, and each server in
    `served` (where -> the fingerprint it reports; None: not serving the champion, not judged)?"""
    champ = Registry(tracking_uri, model_name).champion()
    if champ is None:
        return True, {"reason": "no champion yet"}
    registered = champ.tags.get(WEIGHTS_TAG, "")
    seen = {"champion folder": weights_hash(champ.model_path) if Path(champ.model_path).is_dir() else None,
            **{k: v for k, v in served.items() if v is not None}}
    wrong = sorted(k for k, v in seen.items() if v != registered)
    ok = bool(registered) and not wrong
    why = ("no fingerprint was registered with this version" if not registered else
           f"differs from the registry: {', '.join(wrong)}" if wrong else "every served copy matches the registry")
    return ok, {"champion": champ.uri, "registered": registered or "none", "reason": why,
                **{f"served: {k}": v or "missing" for k, v in seen.items()}}


def promised_rates(tracking_uri: str, uri: str, model_name: str = DEFAULT_MODEL_NAME) -> dict[str, float]:
    """pass@1 per domain version `uri` (`name:version`) scored when it was registered ({} if none recorded)."""
    name, _, version = uri.rpartition(":")
    if not version.isdigit():
        return {}
    tags = Registry(tracking_uri, name or model_name).get(version).tags
    return {k: float(v) for k, v in json.loads(tags.get("flywheel.eval_pass_rates", "{}")).items()}


@dataclass(frozen=True)
class ChampionWatch:
    """One look at the champion in production: the test's decision and, when it rolled back, where to."""

    champion: str
    base_model: str
    decision: RollbackDecision
    rolled_back_to: str | None = None


def watch_champion(con: Any, tracking_uri: str, config: RollbackConfig | None = None,
                   model_name: str = DEFAULT_MODEL_NAME) -> ChampionWatch | None:
    """Test the champion's live pass rate (its lines in `task_logs`, warehouse connection `con`) against what
    it promised; on a significant drop move `champion` back (the reason recorded). None without a champion
    or with no earlier champion to go back to."""
    reg = Registry(tracking_uri, model_name)
    champ = reg.champion()
    if champ is None or len(reg.history()) < 2:
        return None
    promise = json.loads(champ.tags.get(PROMISE_TAG) or champ.tags.get("flywheel.eval_pass_rates", "{}"))
    decision = decide_rollback(live_counts(con, champ.uri), promise, config)
    if not decision.rollback:
        return ChampionWatch(champ.uri, champ.base_model, decision)
    result = rollback_champion(tracking_uri, f"live pass rate dropped: {decision.reason}", model_name)
    return ChampionWatch(champ.uri, champ.base_model, decision, f"{reg.name}:{result.to_version}")
