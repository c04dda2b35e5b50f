"""One turn's evaluation: the candidate and the current champion on the same held-out tasks.

With no champion yet, the base model is registered as the implicit champion first, so
its numbers are the "before" of the first turn. The champion's report is cached per
registered version and config (versions are immutable). Everything lands in one folder
per base model (`eval/<base_model>/` under the storage home) that `deploy_candidate` reads.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flywheel.evaluation.report import bar_chart_png, log_to_mlflow, to_markdown, write_report
from flywheel.evaluation.runner import (
    Comparison,
    EvalReport,
    ScoreFn,
    compare,
    evaluate_policy,
    report_from_dict,
)
from flywheel.evaluation.suites import EvalConfig
from flywheel.paths import FlywheelPaths
from flywheel.registry.mlflow_registry import DEFAULT_MODEL_NAME, Registry


@dataclass
class CandidateEval:
    """Candidate and champion reports, their paired comparison, and where the report went."""

    candidate: EvalReport
    champion: EvalReport
    comparison: Comparison
    champion_uri: str
    report_dir: Path
    eval_run_id: str | None
    markdown: str

    def flat_metrics(self) -> dict[str, Any]:
        """Flat numbers (asset metadata): pass@1 before/after per domain, the paired diffs, cost, contamination."""
        out: dict[str, Any] = {}
        for d, v in self.champion.pass_rates().items():
            out[f"before/{d}/pass@1"] = v
        for d, v in self.candidate.pass_rates().items():
            out[f"after/{d}/pass@1"] = v
        for d, e in self.comparison.diffs.items():
            out[f"diff/{d}"] = round(e.value, 4)
            out[f"diff/{d}/ci"] = f"[{e.lo:+.3f}, {e.hi:+.3f}]"
        m = self.candidate.metrics["overall"]
        out.update({"tokens_per_task": round(m["tokens"].value, 1),
                    "latency_ms_per_task": round(m["latency_ms"].value, 1),
                    "cost_usd_per_task": m["cost_usd"].value, "mean_steps": round(m["steps"].value, 2),
                    "champion": self.champion_uri, "eval_run_id": self.eval_run_id or "",
                    "report_dir": str(self.report_dir),
                    "eval_seconds": round(self.candidate.wall_s + self.champion.wall_s, 1)})
        return out

    def summary(self) -> dict[str, Any]:
        """What `flywheel turn --json` prints: before (champion) and after (candidate) pass rates."""
        return {
            "eval_before": self.champion.pass_rates(),
            "eval_after": self.candidate.pass_rates(),
            "champion": self.champion_uri,
            "candidate": self.candidate.model,
            "diff": {d: round(e.value, 4) for d, e in self.comparison.diffs.items()},
            "regressions": list(self.comparison.regressions),
            "contamination": self.candidate.contamination.to_dict() if self.candidate.contamination else None,
            "eval_run_id": self.eval_run_id,
            "report_dir": str(self.report_dir),
        }


def eval_dir(paths: FlywheelPaths, base_model: str) -> Path:
    return paths.home / "eval" / base_model


def evaluate_candidate(
    candidate_path: str | Path, base_model: str, base_model_path: str | Path,
    config: EvalConfig, paths: FlywheelPaths, train_prompts: Sequence[str] | None = None, tolerance: float = 0.05,
    candidate_name: str | None = None,
    device: str = "cpu", score: ScoreFn | None = None, model_name: str | None = None,
    mlflow_tags: dict[str, str] | None = None,
) -> CandidateEval:
    """Evaluate the candidate at `candidate_path` and the champion on the same tasks; report and log them."""
    paths = paths.ensure()
    uri = paths.mlflow_uri
    reg = Registry(uri, model_name or DEFAULT_MODEL_NAME, artifact_location=paths.mlflow_artifacts.as_uri())
    champ = reg.ensure_champion(base_model_path, base_model, snapshot_root=paths.models / "registry")
    cache = str(paths.home / "eval" / "_cache")
    champ_rep = evaluate_policy(champ.model_path, config, model=champ.uri, device=device, score=score,
                                cache_dir=cache)
    if "flywheel.eval_pass_rates" not in champ.tags:
        reg.set_tags(champ.version, {"flywheel.eval_pass_rates": champ_rep.pass_rates()})
    name = candidate_name or f"candidate-{base_model}"
    cand_rep = evaluate_policy(str(candidate_path), config, model=name, train_prompts=train_prompts,
                               device=device, score=score)
    comparison = compare(cand_rep, champ_rep, tolerance=tolerance)
    out = eval_dir(paths, base_model)
    write_report(out, cand_rep, champ_rep, comparison)
    (out / "meta.json").write_text(json.dumps({"champion_uri": champ.uri, "candidate_path": str(candidate_path),
                                               "base_model": base_model, "tolerance": tolerance}))
    run_id = log_to_mlflow(cand_rep, champ_rep, comparison, tracking_uri=uri,
                           run_name=f"eval-{base_model}", artifact_location=paths.mlflow_artifacts.as_uri(),
                           tags={"flywheel.base_model": base_model, "flywheel.champion": champ.uri,
                                 **(mlflow_tags or {})})
    (out / "meta.json").write_text(json.dumps({**json.loads((out / "meta.json").read_text()), "eval_run_id": run_id}))
    md = to_markdown(cand_rep, champ_rep, comparison,
                     chart_png=bar_chart_png({f"champion {champ.uri}": champ_rep, f"candidate {name}": cand_rep}))
    return CandidateEval(cand_rep, champ_rep, comparison, champ.uri, out, run_id, md)


def load_candidate_eval(directory: str | Path, tolerance: float | None = None) -> CandidateEval:
    """Rebuild a `CandidateEval` from its report folder (what `deployed_model` reads)."""
    d = Path(directory)
    if not (d / "report.json").exists():
        raise FileNotFoundError(f"no evaluation in {d}: materialize eval_report for this base model first")
    payload = json.loads((d / "report.json").read_text())
    meta = json.loads((d / "meta.json").read_text())
    cand, champ = report_from_dict(payload["candidate"]), report_from_dict(payload["baseline"])
    comparison = compare(cand, champ, tolerance=meta.get("tolerance", 0.05) if tolerance is None else tolerance)
    return CandidateEval(cand, champ, comparison, meta["champion_uri"], d, meta.get("eval_run_id"),
                         (d / "report.md").read_text())


def training_prompts(warehouse: str | Path) -> list[str] | None:
    """Prompts of the training pool in the warehouse (`task_pool` table), None when there is none yet."""
    import duckdb

    if not Path(warehouse).exists():
        return None
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        tables = {r[0] for r in con.execute("select table_name from information_schema.tables").fetchall()}
        if "task_pool" not in tables:
            return None
        return [r[0] for r in con.execute("select prompt from task_pool").fetchall() if r[0]]
    finally:
        con.close()

