"""One turn's evaluation: the candidate and the current champion on the same held-out tasks.

With no champion yet, the base model is registered as the implicit champion first, so
its numbers are the "before" of the first turn. The champion is evaluated again in every turn,
under the seed it shares with the candidate (fresh per turn: `EvalConfig.seeded_from`), never read
from an earlier turn: a lucky draw of one turn must not become the bar of the next. Everything
lands in one folder per base model (`eval/<base_model>/` under the storage home) that
`deploy_candidate` reads.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flywheel.evaluation.report import bar_chart_png, log_to_mlflow, reads_as, to_markdown, write_report
from flywheel.evaluation.runner import (
    REGRESSION_TOLERANCE,
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
from flywheel.rollout import EngineSpec
from flywheel.tasks.world_suites import suite_of
from flywheel.warehouse import connect


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
    seed_note: str = ""

    def flat_metrics(self) -> dict[str, Any]:
        """Flat numbers (asset metadata): pass@1 before/after per domain, the paired diffs, cost, contamination."""
        out: dict[str, Any] = {}
        for d, v in self.champion.pass_rates().items():
            out[f"before/{d}/pass@1"] = v
        for d, v in self.candidate.pass_rates().items():
            out[f"after/{d}/pass@1"] = v
        for d, v in self.champion.greedy_rates().items():
            out[f"before/{d}/greedy@1"] = v
        for d, v in self.candidate.greedy_rates().items():
            out[f"after/{d}/greedy@1"] = v
        for prefix, diffs in (("diff", self.comparison.diffs), ("greedy_diff", self.comparison.greedy_diffs)):
            for d, e in diffs.items():
                out[f"{prefix}/{d}"] = round(e.value, 4)
                out[f"{prefix}/{d}/ci"] = f"[{e.lo:+.3f}, {e.hi:+.3f}]"
                out[f"{prefix}/{d}/reads_as"] = reads_as(e)
        for side, rep in (("before", self.champion), ("after", self.candidate)):
            for d, types in rep.failure_counts().items():
                out.update({f"failures/{side}/{d}/{k}": n for k, n in types.items()})
        m = self.candidate.metrics["overall"]
        out.update({"tokens_per_task": round(m["tokens"].value, 1),
                    "latency_ms_per_task": round(m["latency_ms"].value, 1),
                    "cost_usd_per_task": m["cost_usd"].value, "mean_steps": round(m["steps"].value, 2),
                    "champion": self.champion_uri, "eval_run_id": self.eval_run_id or "",
                    "report_dir": str(self.report_dir), "eval_seed": self.candidate.config.seed,
                    "eval_seed_note": self.seed_note,
                    "eval_seconds": round(self.candidate.wall_s + self.champion.wall_s, 1)})
        return out

    def by_suite(self) -> dict[str, dict[str, Any]]:
        """Each evaluation suite's before/after pass@1 per domain (and overall), with the paired difference and
        its interval: `heldout` (in-distribution), `production`, `test` (the frozen suite, never gated)."""
        out: dict[str, dict[str, Any]] = {}
        before, after = self.champion.pass_rates(), self.candidate.pass_rates()
        for unit, e in self.comparison.diffs.items():
            suite = suite_of(unit)
            dom = unit.partition("/")[2] if suite != "heldout" else unit
            s = out.setdefault(suite, {"before": {}, "after": {}, "diff": {}, "ci": {}})
            s["before"][dom], s["after"][dom] = before.get(unit), after.get(unit)
            s["diff"][dom], s["ci"][dom] = round(e.value, 4), [round(e.lo, 4), round(e.hi, 4)]
        return out

    def summary(self) -> dict[str, Any]:
        """What `flywheel turn --json` prints: before (champion) and after (candidate) pass rates at the
        serving temperature and greedy, the paired differences, failure types, the shared seed."""
        return {
            "eval_before": self.champion.pass_rates(),
            "eval_after": self.candidate.pass_rates(),
            "eval_before_greedy": self.champion.greedy_rates(),
            "eval_after_greedy": self.candidate.greedy_rates(),
            "champion": self.champion_uri,
            "candidate": self.candidate.model,
            "diff": {d: round(e.value, 4) for d, e in self.comparison.diffs.items()},
            "greedy_diff": {d: round(e.value, 4) for d, e in self.comparison.greedy_diffs.items()},
            "failure_types": {"before": self.champion.failure_counts(), "after": self.candidate.failure_counts()},
            "eval_seed": self.candidate.config.seed,
            "eval_seed_note": self.seed_note,
            "suites": self.by_suite(),
            "regressions": list(self.comparison.regressions),
            "contamination": self.candidate.contamination.to_dict() if self.candidate.contamination else None,
            "eval_run_id": self.eval_run_id,
            "report_dir": str(self.report_dir),
        }


def eval_dir(paths: FlywheelPaths, base_model: str) -> Path:
    return paths.home / "eval" / base_model


def evaluate_candidate(
    candidate_path: str | Path, base_model: str, base_model_path: str | Path,
    config: EvalConfig, paths: FlywheelPaths, train_prompts: Sequence[str] | None = None, tolerance: float = REGRESSION_TOLERANCE,
    candidate_name: str | None = None, log_partitions: Sequence[str] = (),
    device: str = "cpu", score: ScoreFn | None = None, model_name: str | None = None,
    mlflow_tags: dict[str, str] | None = None, engine: EngineSpec = "torch",
) -> CandidateEval:
    """Evaluate the candidate at `candidate_path` and the champion on the same tasks with the same seed;
    report and log them.

    `log_partitions`: the log days the candidate was trained on; with the base model they derive the
    turn's seed (`EvalConfig.seeded_from`) unless the config turned `derive_seed` off.
    """
    paths = paths.ensure()
    uri = paths.mlflow_uri
    config = config.seeded_from(base_model, log_partitions)
    note = config.seed_note(f"base model `{base_model}` and log partitions [{', '.join(sorted(log_partitions))}]")
    reg = Registry(uri, model_name or DEFAULT_MODEL_NAME, artifact_location=paths.mlflow_artifacts.as_uri())
    champ = reg.ensure_champion(base_model_path, base_model, snapshot_root=paths.models / "registry")
    champ_rep = evaluate_policy(champ.model_path, config, model=champ.uri, device=device, score=score, engine=engine)
    if "flywheel.eval_pass_rates" not in champ.tags:
        reg.set_tags(champ.version, {"flywheel.eval_pass_rates": champ_rep.pass_rates()})
    name = candidate_name or f"candidate-{base_model}"
    cand_rep = evaluate_policy(str(candidate_path), config, model=name, train_prompts=train_prompts, engine=engine,
                               device=device, score=score)
    comparison = compare(cand_rep, champ_rep, tolerance=tolerance)
    out = eval_dir(paths, base_model)
    write_report(out, cand_rep, champ_rep, comparison, seed_note=note)
    meta = {"champion_uri": champ.uri, "candidate_path": str(candidate_path), "base_model": base_model,
            "tolerance": tolerance, "seed": config.seed, "seed_note": note, "log_partitions": list(log_partitions)}
    (out / "meta.json").write_text(json.dumps(meta))
    run_id = log_to_mlflow(cand_rep, champ_rep, comparison, tracking_uri=uri,
                           run_name=f"eval-{base_model}", artifact_location=paths.mlflow_artifacts.as_uri(),
                           tags={"flywheel.base_model": base_model, "flywheel.champion": champ.uri,
                                 "flywheel.eval_seed": str(config.seed), **(mlflow_tags or {})},
                           seed_note=note)
    (out / "meta.json").write_text(json.dumps({**meta, "eval_run_id": run_id}))
    md = to_markdown(cand_rep, champ_rep, comparison, seed_note=note,
                     chart_png=bar_chart_png({f"champion {champ.uri}": champ_rep, f"candidate {name}": cand_rep}))
    return CandidateEval(cand_rep, champ_rep, comparison, champ.uri, out, run_id, md, note)


def load_candidate_eval(directory: str | Path, tolerance: float | None = None) -> CandidateEval:
    """Rebuild a `CandidateEval` from its report folder (what `deployed_model` reads)."""
    d = Path(directory)
    if not (d / "report.json").exists():
        raise FileNotFoundError(f"no evaluation in {d}: materialize eval_report for this base model first")
    payload = json.loads((d / "report.json").read_text())
    meta = json.loads((d / "meta.json").read_text())
    cand, champ = report_from_dict(payload["candidate"]), report_from_dict(payload["baseline"])
    comparison = compare(cand, champ, tolerance=meta.get("tolerance", REGRESSION_TOLERANCE) if tolerance is None else tolerance)
    return CandidateEval(cand, champ, comparison, meta["champion_uri"], d, meta.get("eval_run_id"),
                         (d / "report.md").read_text(), meta.get("seed_note", ""))


def training_prompts(warehouse: str | Path, base_model: str | None = None,
                     replay_per_domain: int = 0) -> list[str] | None:
    """Every prompt training could have shown the candidate: the mined pool (`task_pool`; None when there is
    none yet), the train suites' replay window (`replay_per_domain` tasks a run replays per domain, from the
    first `REPLAY_WINDOW` times as many) and, for a tiny release, its SFT data: what the evaluation sets are
    decontaminated against."""
    if not Path(warehouse).exists():
        return None
    con = connect(warehouse, read_only=True)
    try:
        tables = {r[0] for r in con.execute("select table_name from information_schema.tables").fetchall()}
        if "task_pool" not in tables:
            return None
        prompts = [r[0] for r in con.execute("select prompt from task_pool").fetchall() if r[0]]
    finally:
        con.close()
    if replay_per_domain > 0:
        from flywheel.tasks.suites import DOMAINS, train_suite
        from flywheel.train.common.taskset import REPLAY_WINDOW

        prompts += [t.prompt for d in DOMAINS for t in train_suite(d, REPLAY_WINDOW * replay_per_domain)]
    if base_model:
        from flywheel.models.recipe import is_tiny_release, recipe_for
        from flywheel.models.sft_data import sft_mix

        if is_tiny_release(base_model):
            prompts += [prompt for _, prompt, _ in sft_mix(recipe_for(base_model))]
    return prompts

