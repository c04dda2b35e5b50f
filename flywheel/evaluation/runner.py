"""Run a policy on the held-out suites, score every sample with the verifiers, aggregate.

The policy is any `Generator`: a callable taking tasks and returning `n_samples`
rollouts per task (multi-step agent tasks already run to completion by the engine).
`engine_generator(engine)` wraps a rollout engine (torch or vLLM); tests may pass any other callable.
Scoring always goes through the verifiers (`flywheel.verifiers.score_batch`), never through
a verdict the generator attached, so a candidate and its champion are judged alike.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from flywheel.evaluation.failures import count_failures, failure_type
from flywheel.evaluation.families import family_diffs, family_groups
from flywheel.evaluation.metrics import Estimate, bootstrap_ci, paired_difference, pass_at_k
from flywheel.evaluation.suites import ContaminationReport, EvalConfig, contamination, eval_tasks
from flywheel.progress import progress_bar
from flywheel.rollout import EngineSpec, generate_for_tasks, open_engine
from flywheel.rollout.types import Rollout, SamplingParams
from flywheel.tasks.base import Task
from flywheel.tasks.world_suites import suite_of, unit_name
from flywheel.verifiers import score_batch
from flywheel.verifiers.verdict import Verdict

ScoreFn = Callable[[str, dict, str], Verdict]
"""`score(domain, verifier_task, response) -> Verdict`, the verifiers' entry point."""


class Generator(Protocol):
    def __call__(self, tasks: Sequence[Task], config: EvalConfig) -> list[list[Rollout]]:
        """`config.n_samples` rollouts for each task, in task order."""
        ...


@dataclass(frozen=True)
class TaskResult:
    """All samples of one task: pass/fail per sample and the per-sample costs, averaged.

    `failures`: each sample's failure type ("" when it passed, see `failures.failure_type`);
    `greedy`/`greedy_failure`: the one greedy sample's outcome (None/"" when greedy was not scored).
    """

    task_id: str
    domain: str
    passed: tuple[bool, ...]
    steps: float
    prompt_tokens: float
    completion_tokens: float
    latency_ms: float
    cost_usd: float
    reasons: tuple[str, ...] = ()
    failures: tuple[str, ...] = ()
    greedy: bool | None = None
    greedy_failure: str = ""

    @property
    def pass1(self) -> float:
        return sum(self.passed) / len(self.passed)

    def pass_k(self, k: int) -> float:
        return pass_at_k(len(self.passed), sum(self.passed), k)

    def to_dict(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id, "domain": self.domain, "passed": list(self.passed),
            "steps": self.steps, "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens, "latency_ms": self.latency_ms,
            "cost_usd": self.cost_usd, "reasons": list(self.reasons), "failures": list(self.failures),
            "greedy": self.greedy, "greedy_failure": self.greedy_failure,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TaskResult:
        return cls(d["task_id"], d["domain"], tuple(d["passed"]), d["steps"], d["prompt_tokens"],
                   d["completion_tokens"], d["latency_ms"], d["cost_usd"], tuple(d.get("reasons", ())),
                   tuple(d.get("failures", ())), d.get("greedy"), d.get("greedy_failure", ""))


METRICS = ("pass@1", "steps", "tokens", "latency_ms", "cost_usd")
GREEDY = "greedy@1"
"""Metric name of greedy pass@1 (one temperature-0 sample per task), present when greedy was scored."""


@dataclass
class EvalReport:
    """One policy's evaluation: per-task results and, per domain and `overall`, each metric with its CI.

    `overall` pools all tasks (micro average), so a domain with more tasks weighs more.
    """

    model: str
    config: EvalConfig
    tasks: list[TaskResult]
    metrics: dict[str, dict[str, Estimate]] = field(default_factory=dict)
    contamination: ContaminationReport | None = None
    wall_s: float = 0.0

    def pass_rates(self) -> dict[str, float]:
        """pass@1 per domain and `overall`: the numbers `flywheel turn` prints as before/after."""
        return {d: round(m["pass@1"].value, 4) for d, m in self.metrics.items()}

    def greedy_rates(self) -> dict[str, float]:
        """Greedy pass@1 per domain and `overall` ({} when greedy was not scored)."""
        return {d: round(m[GREEDY].value, 4) for d, m in self.metrics.items() if GREEDY in m}

    def scores(self, domain: str | None = None) -> dict[str, float]:
        return {t.task_id: t.pass1 for t in self.tasks if in_unit(t.domain, domain)}

    def greedy_scores(self, domain: str | None = None) -> dict[str, float]:
        return {t.task_id: float(t.greedy) for t in self.tasks if t.greedy is not None and in_unit(t.domain, domain)}

    def failure_counts(self, greedy: bool = False) -> dict[str, dict[str, int]]:
        """Failing samples per domain by failure type (`greedy`: of the greedy samples instead)."""
        out: dict[str, list[str]] = {}
        for t in self.tasks:
            out.setdefault(t.domain, []).extend([t.greedy_failure] if greedy else t.failures)
        return {d: count_failures(types) for d, types in out.items()}

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "config": self.config.to_dict(),
            "metrics": {d: {k: e.to_dict() for k, e in m.items()} for d, m in self.metrics.items()},
            "pass_rates": self.pass_rates(),
            "greedy_rates": self.greedy_rates(),
            "failure_types": self.failure_counts(),
            "greedy_failure_types": self.failure_counts(greedy=True),
            "contamination": self.contamination.to_dict() if self.contamination else None,
            "tasks": [t.to_dict() for t in self.tasks],
            "wall_s": self.wall_s,
        }


def overall_name(suite: str) -> str:
    """The unit pooling one suite's tasks: `overall` (heldout), `production/overall`, `test/overall`."""
    return unit_name(suite, "overall")


def in_unit(task_unit: str, unit: str | None) -> bool:
    """Whether a task reported under `task_unit` counts in `unit` (None: every task; a suite's overall:
    that suite's tasks; else the unit itself)."""
    if unit is None:
        return True
    if unit == "overall" or unit.endswith("/overall"):
        return suite_of(task_unit) == suite_of(unit)
    return task_unit == unit


def aggregate(results: Sequence[TaskResult], config: EvalConfig) -> dict[str, dict[str, Estimate]]:
    """Each metric per unit (a suite's domain) and per suite overall, with a seeded bootstrap CI over tasks."""
    out: dict[str, dict[str, Estimate]] = {}
    groups: dict[str, list[TaskResult]] = {}
    for r in results:
        groups.setdefault(r.domain, []).append(r)
    for suite in dict.fromkeys(suite_of(r.domain) for r in results) or ("heldout",):
        groups[overall_name(suite)] = [r for r in results if suite_of(r.domain) == suite]
    for name, rs in groups.items():
        cols = {
            "pass@1": [r.pass1 for r in rs],
            "steps": [r.steps for r in rs],
            "tokens": [r.prompt_tokens + r.completion_tokens for r in rs],
            "latency_ms": [r.latency_ms for r in rs],
            "cost_usd": [r.cost_usd for r in rs],
        }
        for k in range(2, config.n_samples + 1):
            cols[f"pass@{k}"] = [r.pass_k(k) for r in rs]
        if rs and all(r.greedy is not None for r in rs):
            cols[GREEDY] = [float(r.greedy) for r in rs]
        out[name] = {m: bootstrap_ci(v, n_boot=config.n_boot, alpha=config.alpha, seed=config.seed)
                     for m, v in cols.items()}
    return out


def score_all(items: Sequence[tuple[str, dict, str]], score: ScoreFn | None = None,
              concurrency: int = 2) -> list[Verdict]:
    """Verdicts of `(domain, verifier_task, response)` items, in order: the verifiers' batch API by default."""
    if score is not None:
        return [score(d, t, r) for d, t, r in items]
    return list(score_batch(list(items), concurrency=concurrency))


def score_rollouts(
    tasks: Sequence[Task], rollouts: Sequence[Sequence[Rollout]], config: EvalConfig,
    score: ScoreFn | None = None, batch_latency_ms: float | None = None,
    greedy: Sequence[Sequence[Rollout]] | None = None,
) -> list[TaskResult]:
    """Verdicts for every sample (one batch through the verifiers), folded into one `TaskResult` per task.

    `greedy`: one greedy rollout per task, scored in the same batch; costs and latency count the
    sampled rollouts only.
    """
    greedy = greedy if greedy is not None else [[] for _ in tasks]
    if len(rollouts) != len(tasks) or len(greedy) != len(tasks):
        raise ValueError(f"generator returned {len(rollouts)} groups ({len(greedy)} greedy) for {len(tasks)} tasks")
    both = [[*group, *g[:1]] for group, g in zip(rollouts, greedy, strict=True)]
    items = [(t.domain, t.verifier_task(), r.text) for t, group in zip(tasks, both, strict=True) for r in group]
    flat = iter(score_all(items, score))
    out = []
    for task, group, g in zip(tasks, rollouts, greedy, strict=True):
        vt = task.verifier_task()
        verdicts = [next(flat) for _ in group]
        failures = tuple(failure_type(task.domain, vt, r.text, v) for r, v in zip(group, verdicts, strict=True))
        gv = next(flat) if g else None
        pt = [len(r.prompt_ids) for r in group]
        ct = [int(sum(r.loss_mask)) if r.loss_mask else len(r.token_ids) for r in group]
        lat = [float(r.meta.get("latency_ms", batch_latency_ms or 0.0)) for r in group]
        out.append(TaskResult(
            task_id=task.task_id, domain=task.domain,
            passed=tuple(bool(v.passed) for v in verdicts),
            steps=float(np.mean([len(r.steps) for r in group])),
            prompt_tokens=float(np.mean(pt)), completion_tokens=float(np.mean(ct)),
            latency_ms=float(np.mean(lat)),
            cost_usd=float(np.mean([config.cost_usd(p, c) for p, c in zip(pt, ct, strict=True)])),
            reasons=tuple(v.reason for v in verdicts), failures=failures,
            greedy=None if gv is None else bool(gv.passed),
            greedy_failure="" if gv is None else failure_type(task.domain, vt, g[0].text, gv),
        ))
    return out


def engine_generator(engine: Any) -> Generator:
    """A `Generator` over a rollout engine (torch or vLLM): agent tasks run their tool loop to the end."""

    def generate(tasks: Sequence[Task], config: EvalConfig) -> list[list[Rollout]]:
        sp = SamplingParams(temperature=config.temperature, max_new_tokens=config.max_new_tokens, seed=config.seed)
        groups: list[list[Rollout]] = [[] for _ in tasks]
        for r in generate_for_tasks(engine, tasks, config.n_samples, sp, max_steps=config.max_steps):
            groups[r.group_id].append(r)
        return groups

    return generate


def evaluate(
    generate: Generator, config: EvalConfig | None = None, model: str = "policy",
    train_prompts: Sequence[str] | None = None, score: ScoreFn | None = None,
    tasks: Mapping[str, Sequence[Task]] | None = None,
) -> EvalReport:
    """Evaluate one policy on the held-out suites (or `tasks`), domain by domain: `n_samples` per task at
    `temperature` and, with `config.greedy`, one more at temperature 0 (greedy pass@1 beside pass@1).

    `train_prompts`: the training pool's prompts; when given, the report carries the
    contamination check against them (the `eval_report` asset check reads it).
    """
    config = config or EvalConfig()
    task_sets = dict(tasks) if tasks is not None else eval_tasks(config)
    t0 = time.perf_counter()
    results: list[TaskResult] = []
    bar = progress_bar(sum(len(ts) for ts in task_sets.values()), f"evaluating {model}", unit=" tasks")
    for domain, ts in task_sets.items():
        if not ts:
            continue
        bar.set_postfix(domain=domain, refresh=False)
        t = time.perf_counter()
        groups = generate(list(ts), config)
        per = (time.perf_counter() - t) * 1000 / max(1, len(ts) * config.n_samples)
        greedy = generate(list(ts), replace(config, n_samples=1, temperature=0.0)) if config.greedy else None
        scored = score_rollouts(ts, groups, config, score=score, batch_latency_ms=per, greedy=greedy)
        if domain != ts[0].domain:  # another suite's unit: named, and its task ids kept apart, by suite
            scored = [replace(r, domain=domain, task_id=f"{suite_of(domain)}/{r.task_id}") for r in scored]
        results.extend(scored)
        bar.update(len(ts))
    bar.close()
    report = EvalReport(model=model, config=config, tasks=results, metrics=aggregate(results, config))
    if train_prompts is not None:
        report.contamination = contamination(task_sets, train_prompts)
    report.wall_s = time.perf_counter() - t0
    return report


@dataclass(frozen=True)
class Comparison:
    """Candidate minus baseline pass@1 on the same tasks, per domain and overall, with paired CIs
    (`greedy_diffs`: the same for greedy pass@1, when both reports scored greedy)."""

    candidate: str
    baseline: str
    diffs: dict[str, Estimate]
    regressions: tuple[str, ...]
    tolerance: float
    greedy_diffs: dict[str, Estimate] = field(default_factory=dict)
    families: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Rolled-up families (two or more of an environment's domains) -> their domains."""
    family_diffs: dict[str, Estimate] = field(default_factory=dict)
    """The same paired difference per family, its domains' tasks pooled."""
    alpha: float = 0.05
    """1 - the confidence level of every interval above (the evaluation's `alpha`)."""

    def to_dict(self) -> dict[str, Any]:
        return {"candidate": self.candidate, "baseline": self.baseline,
                "diffs": {d: e.to_dict() for d, e in self.diffs.items()},
                "greedy_diffs": {d: e.to_dict() for d, e in self.greedy_diffs.items()},
                "families": {f: list(ds) for f, ds in self.families.items()},
                "family_diffs": {f: e.to_dict() for f, e in self.family_diffs.items()},
                "regressions": list(self.regressions), "tolerance": self.tolerance, "alpha": self.alpha}


def _paired(candidate: dict[str, float], baseline: dict[str, float], cfg: EvalConfig) -> Estimate:
    common = sorted(set(candidate) & set(baseline))
    return paired_difference([candidate[i] for i in common], [baseline[i] for i in common],
                             n_boot=cfg.n_boot, alpha=cfg.alpha, seed=cfg.seed)


REGRESSION_TOLERANCE = 0.05
"""Largest per-domain pass@1 drop a comparison does not flag as a regression (a warning; the gate decides)."""


def compare(candidate: EvalReport, baseline: EvalReport, tolerance: float = REGRESSION_TOLERANCE) -> Comparison:
    """Paired pass@1 differences on the tasks both reports share; a domain regresses if it drops by > `tolerance`."""
    cfg = candidate.config
    diffs: dict[str, Estimate] = {}
    greedy: dict[str, Estimate] = {}
    domains = sorted({t.domain for t in candidate.tasks})
    overalls = [overall_name(s) for s in dict.fromkeys(suite_of(d) for d in domains)] or ["overall"]
    for d in [*domains, *overalls]:
        diffs[d] = _paired(candidate.scores(d), baseline.scores(d), cfg)
        cg, bg = candidate.greedy_scores(d), baseline.greedy_scores(d)
        if cg and bg:
            greedy[d] = _paired(cg, bg, cfg)
    regressions = tuple(d for d in domains if diffs[d].n and diffs[d].value < -tolerance)
    groups = family_groups(domains)
    fam_diffs = family_diffs(candidate, baseline, groups) if groups else {}
    return Comparison(candidate.model, baseline.model, diffs, regressions, tolerance, greedy,
                      {f: tuple(ds) for f, ds in groups.items()}, fam_diffs, cfg.alpha)


def report_from_dict(d: dict[str, Any]) -> EvalReport:
    """Rebuild a report from `EvalReport.to_dict()` (intervals recomputed: they are seeded, so identical)."""
    cfg = EvalConfig(**d["config"])
    tasks = [TaskResult.from_dict(t) for t in d["tasks"]]
    rep = EvalReport(d["model"], cfg, tasks, aggregate(tasks, cfg), wall_s=d.get("wall_s", 0.0))
    c = d.get("contamination")
    if c:
        rep.contamination = ContaminationReport(c["n_eval"], c["n_train"], tuple(c.get("overlapping_task_ids", ())),
                                                (), c["ngram"])
    return rep


def _cache_key(model: str, config: EvalConfig, model_path: str = "") -> str:
    """Model id + where its weights are and when they were written + the config: a reset registry that
    reuses a version number, or weights rewritten in place, never hits a stale report."""
    p = Path(model_path)
    stamp = max((f.stat().st_mtime_ns for f in p.iterdir() if f.is_file()), default=0) if p.is_dir() else 0
    blob = json.dumps({"model": model, "path": str(p.resolve()) if model_path else "", "stamp": stamp,
                       "config": config.to_dict()}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def evaluate_policy(
    model_path: str, config: EvalConfig | None = None, model: str | None = None,
    train_prompts: Sequence[str] | None = None, device: str = "cpu", engine: EngineSpec = "torch",
    score: ScoreFn | None = None, cache_dir: str | None = None,
) -> EvalReport:
    """Load the checkpoint at `model_path` into a rollout engine and evaluate it on the held-out suites.

    `model`: the id the report carries (registered `name:version`, or the base-model name).
    `cache_dir`: reuse the report of the same immutable `model` id under the same config
    (a registered version never changes, so the champion is scored once per config).
    """
    config = config or EvalConfig()
    model = model or Path(model_path).name
    cached = Path(cache_dir) / f"{_cache_key(model, config, model_path)}.json" if cache_dir else None
    if cached is not None and cached.exists():
        rep = report_from_dict(json.loads(cached.read_text()))
        if train_prompts is not None:
            rep.contamination = contamination(eval_tasks(config), train_prompts)
        return rep
    eng = open_engine(engine, model_path, device=device)
    rep = evaluate(engine_generator(eng), config, model=model, train_prompts=train_prompts, score=score)
    if cached is not None:
        cached.parent.mkdir(parents=True, exist_ok=True)
        cached.write_text(json.dumps(rep.to_dict(), default=str))
    return rep
