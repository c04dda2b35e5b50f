"""The evaluation report a person reads: a Markdown table, a bar chart PNG, and the same in MLflow.

`to_markdown(..., inline_chart=True)` embeds the PNG as base64, which the Dagster UI
renders inside `MetadataValue.md`; MLflow gets `report.md`, `pass_rates.png` and the
full `report.json` as artifacts of one run. Its pass@1 per domain and the paired differences
vs the baseline (the champion, in a turn) are keyed `1_pass_at_1/<domain>` and
`2_diff_vs_baseline/<domain>.<metric>`: the MLflow UI sorts chart sections by the prefix before
the last `/` and puts keys without one last.
"""

from __future__ import annotations

import base64
import io
import json
import math
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from flywheel.evaluation.metrics import Estimate
from flywheel.evaluation.runner import GREEDY, METRICS, Comparison, EvalReport
from flywheel.tracking import EVAL_EXPERIMENT, ensure_experiment


def fmt_estimate(e: Estimate | None, digits: int = 3) -> str:
    """`value [lo, hi]`, or n/a when nothing was measured."""
    return "n/a" if e is None or math.isnan(e.value) else e.fmt(digits)


def reads_as(e: Estimate | None) -> str:
    """What a paired difference supports: a change only when its interval excludes 0."""
    if e is None or not e.n or math.isnan(e.value):
        return "n/a"
    if e.lo <= 0 <= e.hi:
        return "noise (CI contains 0)"
    return "better" if e.lo > 0 else "worse"


CHART_MAX_BARS = 12
"""More domains than this and the chart shows families (rolled up) beside the built-in domains instead."""


def chart_rows(report: EvalReport, many: bool) -> dict[str, Estimate]:
    """pass@1 per bar: each domain, or with `many` domains each rolled-up family and the domains outside one."""
    from flywheel.evaluation.families import family_groups, family_metrics

    rows = {d: m["pass@1"] for d, m in report.metrics.items() if d != "overall"}
    if many:
        groups = family_groups([t.domain for t in report.tasks])
        rolled = {d for ds in groups.values() for d in ds}
        rows = {d: e for d, e in rows.items() if d not in rolled}
        rows.update({f"{f} ({len(groups[f])})": m["pass@1"] for f, m in family_metrics(report).items()})
    if "overall" in report.metrics:
        rows["overall"] = report.metrics["overall"]["pass@1"]
    return rows


def bar_chart_png(reports: Mapping[str, EvalReport]) -> bytes:
    """pass@1 per domain for each labelled report, with 95% bootstrap intervals as error bars (per family
    beside the built-in domains when there are more than `CHART_MAX_BARS` domains)."""
    import matplotlib  # heavy: only a report that draws its chart loads it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # heavy: only a chart loads matplotlib

    labels = list(reports)
    many = len({d for r in reports.values() for d in r.metrics if d != "overall"}) > CHART_MAX_BARS
    per = {label: chart_rows(r, many) for label, r in reports.items()}
    domains = sorted({d for rows in per.values() for d in rows if d != "overall"}) + ["overall"]
    x = np.arange(len(domains))
    width = 0.8 / max(1, len(labels))
    fig, ax = plt.subplots(figsize=(6.4, 3.4), dpi=100)
    for i, label in enumerate(labels):
        m = per[label]
        vals = [m[d].value if d in m else 0.0 for d in domains]
        lo = [v - m[d].lo if d in m else 0.0 for v, d in zip(vals, domains, strict=True)]
        hi = [m[d].hi - v if d in m else 0.0 for v, d in zip(vals, domains, strict=True)]
        ax.bar(x + (i - (len(labels) - 1) / 2) * width, vals, width, yerr=[lo, hi], capsize=3, label=label)
    ax.set_xticks(x, domains, rotation=30 if len(domains) > 5 else 0, ha="right" if len(domains) > 5 else "center",
                  fontsize=8)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("pass@1 (95% CI)")
    ax.set_title("Held-out task completion")
    ax.legend(fontsize=8)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()


def metrics_table(report: EvalReport) -> str:
    """One row per domain (and overall), one column per metric, `value [lo, hi]`."""
    ks = [f"pass@{k}" for k in range(2, report.config.n_samples + 1)]
    greedy = [GREEDY] if any(GREEDY in m for m in report.metrics.values()) else []
    cols = ["pass@1", *greedy, *ks, *METRICS[1:]]
    lines = ["| domain | tasks | " + " | ".join(cols) + " |", "|" + "---|" * (len(cols) + 2)]
    for d, m in report.metrics.items():
        digits = {"cost_usd": 6, "latency_ms": 1, "tokens": 1, "steps": 2}
        cells = [fmt_estimate(m.get(c), digits.get(c, 3)) for c in cols]
        lines.append(f"| {d} | {m['pass@1'].n} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def comparison_table(comparison: Comparison) -> str:
    """Paired differences per domain, pass@1 at the sampling temperature and greedy, each read honestly."""
    lines = ["| domain | pass@1 difference [95% CI] | reads as | greedy@1 difference [95% CI] | reads as "
             "| tasks | regression |", "|---|---|---|---|---|---|---|"]
    for d, e in comparison.diffs.items():
        g = comparison.greedy_diffs.get(d)
        flag = "**yes**" if d in comparison.regressions else ""
        lines.append(f"| {d} | {fmt_estimate(e)} | {reads_as(e)} | {fmt_estimate(g)} | {reads_as(g)} "
                     f"| {e.n} | {flag} |")
    return "\n".join(lines)


def failure_table(report: EvalReport, baseline: EvalReport | None = None) -> str:
    """Failing samples by type per domain: baseline (before) beside report (after), sampled and greedy."""
    sides = [("before", baseline), ("after", report)] if baseline is not None else [("", report)]
    cols = [(f"{name} greedy" if g else name or "sampled", r.failure_counts(greedy=g))
            for g in ((False, True) if report.greedy_rates() else (False,)) for name, r in sides]
    lines = ["| domain | failure type | " + " | ".join(c for c, _ in cols) + " |", "|---|---|" + "---|" * len(cols)]
    domains = [d for d in report.metrics if d != "overall"]
    for d in domains:
        total: dict[str, int] = {}
        for _, counts in cols:
            for k, n in counts.get(d, {}).items():
                total[k] = total.get(k, 0) + n
        for k in sorted(total, key=lambda k: (-total[k], k)):
            lines.append(f"| {d} | {k} | " + " | ".join(str(c.get(d, {}).get(k, 0)) for _, c in cols) + " |")
    per = {d: [t for t in report.tasks if t.domain == d] for d in domains}
    lines += ["", "Out of " + ", ".join(f"{d}: {sum(len(t.passed) for t in ts)} sampled and "
                                        f"{sum(t.greedy is not None for t in ts)} greedy" for d, ts in per.items())
              + " samples per model."]
    return "\n".join(lines)


def to_markdown(
    report: EvalReport, baseline: EvalReport | None = None, comparison: Comparison | None = None,
    chart_png: bytes | None = None, inline_chart: bool = True, seed_note: str | None = None,
) -> str:
    """The whole report: metrics of the candidate (and baseline), the paired comparison, failure types,
    the seed both were sampled with, the chart."""
    from flywheel.evaluation.families import family_table

    parts = [f"## Evaluation of `{report.model}`", "", metrics_table(report), ""]
    fam = family_table(report, baseline)
    if fam:
        parts += ["### By family (the tasks of each family's domains pooled)", "", fam, ""]
    if baseline is not None:
        parts += [f"### Baseline `{baseline.model}`", "", metrics_table(baseline), ""]
    if comparison is not None:
        parts += [f"### `{comparison.candidate}` minus `{comparison.baseline}` (paired bootstrap over tasks)", "",
                  comparison_table(comparison), "",
                  "A difference whose 95% interval contains 0 is noise: this evaluation cannot tell it from no "
                  "change.", ""]
    parts += ["### Failure types (failing samples)", "", failure_table(report, baseline), ""]
    short = {d: (n, report.metrics[d]["pass@1"].n) for d, n in report.config.tasks_per_domain.items()
             if d in report.metrics and report.metrics[d]["pass@1"].n < n}
    if short:
        parts += ["Fewer held-out tasks than configured exist: " + ", ".join(
            f"{d} {got} of {n}" for d, (n, got) in short.items()) + ".", ""]
    if report.contamination is not None:
        c = report.contamination
        parts.append(f"Decontamination: {c.n_eval} eval prompts vs {c.n_train} training prompts: "
                     f"{len(c.exact)} exact overlaps, {len(c.near)} near ({c.ngram}-gram).")
        parts.append("")
    cfg = report.config
    parts.append(f"Seed: {seed_note or f'seed {cfg.seed}'}; both models sampled with it.")
    parts.append(f"Config: n_samples={cfg.n_samples}, temperature={cfg.temperature}, greedy={cfg.greedy}, "
                 f"max_new_tokens={cfg.max_new_tokens}, seed={cfg.seed}, tasks={dict(cfg.tasks_per_domain)}.")
    if chart_png is not None and inline_chart:
        parts += ["", f"![pass@1](data:image/png;base64,{base64.b64encode(chart_png).decode()})"]
    return "\n".join(parts) + "\n"


def write_report(
    out_dir: str | Path, report: EvalReport, baseline: EvalReport | None = None,
    comparison: Comparison | None = None, seed_note: str | None = None,
) -> dict[str, Path]:
    """`report.md` (chart linked, not inlined), `pass_rates.png`, `report.json` under `out_dir`."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    labels = {f"candidate {report.model}": report}
    if baseline is not None:
        labels = {f"baseline {baseline.model}": baseline, **labels}
    png = bar_chart_png(labels)
    (out / "pass_rates.png").write_bytes(png)
    md = to_markdown(report, baseline, comparison, inline_chart=False, seed_note=seed_note)
    md += "\n![pass@1](pass_rates.png)\n"
    (out / "report.md").write_text(md)
    from flywheel.evaluation.families import family_diffs, family_metrics

    fams = {"candidate": {f: {k: e.to_dict() for k, e in m.items()} for f, m in family_metrics(report).items()}}
    if baseline is not None:
        fams["baseline"] = {f: {k: e.to_dict() for k, e in m.items()} for f, m in family_metrics(baseline).items()}
        fams["diff_pass@1"] = {f: e.to_dict() for f, e in family_diffs(report, baseline).items()}
    payload: dict[str, Any] = {"candidate": report.to_dict(), "families": fams,
                               "baseline": baseline.to_dict() if baseline else None,
                               "comparison": comparison.to_dict() if comparison else None,
                               "seed": {"seed": report.config.seed, "note": seed_note or f"seed {report.config.seed}"},
                               "failure_types": {"after": report.failure_counts(),
                                                 "after_greedy": report.failure_counts(greedy=True),
                                                 "before": baseline.failure_counts() if baseline else None,
                                                 "before_greedy": baseline.failure_counts(greedy=True)
                                                 if baseline else None}}
    (out / "report.json").write_text(json.dumps(payload, indent=1, default=str))
    return {"markdown": out / "report.md", "chart": out / "pass_rates.png", "json": out / "report.json"}


def log_to_mlflow(
    report: EvalReport, baseline: EvalReport | None = None, comparison: Comparison | None = None,
    tracking_uri: str | None = None, experiment: str = EVAL_EXPERIMENT, run_name: str | None = None,
    tags: Mapping[str, str] | None = None, artifact_location: str | None = None, seed_note: str | None = None,
) -> str:
    """One MLflow run with params (eval config), metrics (per domain, with CI bounds) and the report artifacts.

    Uses an explicit `MlflowClient`, never the process-global tracking URI (which mlflow also
    exports to the environment), so evaluation cannot redirect anyone else's logging.
    """
    from mlflow import MlflowClient  # heavy: only logging a report loads it
    from mlflow.entities import Metric, Param  # heavy: mlflow loads only where a run is logged

    client = MlflowClient(tracking_uri=tracking_uri)
    exp_id = ensure_experiment(client, experiment, artifact_location)
    run = client.create_run(exp_id, run_name=run_name or f"eval-{report.model}",
                            tags={"flywheel.kind": "eval", "flywheel.model": report.model, **dict(tags or {})})
    run_id = run.info.run_id
    now = int(time.time() * 1000)
    metrics: dict[str, float] = {}
    for d, m in report.metrics.items():
        for name, e in m.items():
            if not math.isnan(e.value):
                key = name.replace("@", "_at_")
                metrics[f"1_pass_at_1/{d}" if key == "pass_at_1" else f"{d}.{key}"] = e.value
                metrics[f"{d}.{key}.ci_lo"] = e.lo
                metrics[f"{d}.{key}.ci_hi"] = e.hi
    if comparison is not None:
        for name, diffs in (("pass_at_1", comparison.diffs), ("greedy_at_1", comparison.greedy_diffs)):
            for d, e in diffs.items():
                if not math.isnan(e.value):
                    metrics[f"2_diff_vs_baseline/{d}.{name}"] = e.value
    from flywheel.evaluation.families import family_metrics

    for fam, m in family_metrics(report).items():
        if not math.isnan(m["pass@1"].value):
            metrics[f"1_pass_at_1/family:{fam}"] = m["pass@1"].value
    for d, types in report.failure_counts().items():
        metrics.update({f"{d}.failures.{k}": float(n) for k, n in types.items()})
    client.log_batch(run_id, metrics=[Metric(k, float(v), now, 0) for k, v in metrics.items()],
                     params=[Param(k, str(v)) for k, v in report.config.to_params().items()])
    with tempfile.TemporaryDirectory() as tmp:
        write_report(tmp, report, baseline, comparison, seed_note=seed_note)
        client.log_artifacts(run_id, tmp, artifact_path="eval_report")
    client.set_terminated(run_id)
    return run_id
