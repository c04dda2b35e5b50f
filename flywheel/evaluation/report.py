"""The evaluation report a person reads: a Markdown table, a bar chart PNG, and the same in MLflow.

`to_markdown(..., inline_chart=True)` embeds the PNG as base64, which the Dagster UI
renders inside `MetadataValue.md`; MLflow gets `report.md`, `pass_rates.png` and the
full `report.json` as artifacts of one run.
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

from flywheel.evaluation.runner import METRICS, Comparison, EvalReport


def _fmt(e, digits: int = 3) -> str:
    return "n/a" if e is None or math.isnan(e.value) else e.fmt(digits)


def bar_chart_png(reports: Mapping[str, EvalReport]) -> bytes:
    """pass@1 per domain for each labelled report, with 95% bootstrap intervals as error bars."""
    import matplotlib  # heavy: only a report that draws its chart loads it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = list(reports)
    domains = sorted({d for r in reports.values() for d in r.metrics if d != "overall"}) + ["overall"]
    x = np.arange(len(domains))
    width = 0.8 / max(1, len(labels))
    fig, ax = plt.subplots(figsize=(6.4, 3.4), dpi=100)
    for i, label in enumerate(labels):
        m = reports[label].metrics
        vals = [m[d]["pass@1"].value if d in m else 0.0 for d in domains]
        lo = [v - m[d]["pass@1"].lo if d in m else 0.0 for v, d in zip(vals, domains, strict=True)]
        hi = [m[d]["pass@1"].hi - v if d in m else 0.0 for v, d in zip(vals, domains, strict=True)]
        ax.bar(x + (i - (len(labels) - 1) / 2) * width, vals, width, yerr=[lo, hi], capsize=3, label=label)
    ax.set_xticks(x, domains)
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
    cols = ["pass@1", *ks, *METRICS[1:]]
    lines = ["| domain | tasks | " + " | ".join(cols) + " |", "|" + "---|" * (len(cols) + 2)]
    for d, m in report.metrics.items():
        digits = {"cost_usd": 6, "latency_ms": 1, "tokens": 1, "steps": 2}
        cells = [_fmt(m.get(c), digits.get(c, 3)) for c in cols]
        lines.append(f"| {d} | {m['pass@1'].n} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def to_markdown(
    report: EvalReport, baseline: EvalReport | None = None, comparison: Comparison | None = None,
    chart_png: bytes | None = None, inline_chart: bool = True,
) -> str:
    """The whole report: metrics of the candidate (and baseline), the paired comparison, the chart."""
    parts = [f"## Evaluation of `{report.model}`", "", metrics_table(report), ""]
    if baseline is not None:
        parts += [f"### Baseline `{baseline.model}`", "", metrics_table(baseline), ""]
    if comparison is not None:
        parts += [f"### `{comparison.candidate}` minus `{comparison.baseline}` (pass@1, paired bootstrap)", "",
                  "| domain | difference [95% CI] | tasks | regression |", "|---|---|---|---|"]
        for d, e in comparison.diffs.items():
            flag = "**yes**" if d in comparison.regressions else ""
            parts.append(f"| {d} | {_fmt(e)} | {e.n} | {flag} |")
        parts.append("")
    if report.contamination is not None:
        c = report.contamination
        parts.append(f"Decontamination: {c.n_eval} eval prompts vs {c.n_train} training prompts: "
                     f"{len(c.exact)} exact overlaps, {len(c.near)} near ({c.ngram}-gram).")
        parts.append("")
    cfg = report.config
    parts.append(f"Config: n_samples={cfg.n_samples}, temperature={cfg.temperature}, "
                 f"max_new_tokens={cfg.max_new_tokens}, seed={cfg.seed}, tasks={dict(cfg.tasks_per_domain)}.")
    if chart_png is not None and inline_chart:
        parts += ["", f"![pass@1](data:image/png;base64,{base64.b64encode(chart_png).decode()})"]
    return "\n".join(parts) + "\n"


def write_report(
    out_dir: str | Path, report: EvalReport, baseline: EvalReport | None = None,
    comparison: Comparison | None = None,
) -> dict[str, Path]:
    """`report.md` (chart linked, not inlined), `pass_rates.png`, `report.json` under `out_dir`."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    labels = {f"candidate {report.model}": report}
    if baseline is not None:
        labels = {f"baseline {baseline.model}": baseline, **labels}
    png = bar_chart_png(labels)
    (out / "pass_rates.png").write_bytes(png)
    md = to_markdown(report, baseline, comparison, inline_chart=False) + "\n![pass@1](pass_rates.png)\n"
    (out / "report.md").write_text(md)
    payload: dict[str, Any] = {"candidate": report.to_dict(),
                               "baseline": baseline.to_dict() if baseline else None,
                               "comparison": comparison.to_dict() if comparison else None}
    (out / "report.json").write_text(json.dumps(payload, indent=1, default=str))
    return {"markdown": out / "report.md", "chart": out / "pass_rates.png", "json": out / "report.json"}


def log_to_mlflow(
    report: EvalReport, baseline: EvalReport | None = None, comparison: Comparison | None = None,
    tracking_uri: str | None = None, experiment: str = "flywheel-eval", run_name: str | None = None,
    tags: Mapping[str, str] | None = None, artifact_location: str | None = None,
) -> str:
    """One MLflow run with params (eval config), metrics (per domain, with CI bounds) and the report artifacts.

    Uses an explicit `MlflowClient`, never the process-global tracking URI (which mlflow also
    exports to the environment), so evaluation cannot redirect anyone else's logging.
    """
    from mlflow import MlflowClient  # heavy: only logging a report loads it
    from mlflow.entities import Metric, Param

    client = MlflowClient(tracking_uri=tracking_uri)
    exp = client.get_experiment_by_name(experiment)
    exp_id = exp.experiment_id if exp else client.create_experiment(experiment, artifact_location=artifact_location)
    run = client.create_run(exp_id, run_name=run_name or f"eval-{report.model}",
                            tags={"flywheel.kind": "eval", "flywheel.model": report.model, **dict(tags or {})})
    run_id = run.info.run_id
    now = int(time.time() * 1000)
    metrics: dict[str, float] = {}
    for d, m in report.metrics.items():
        for name, e in m.items():
            if not math.isnan(e.value):
                key = name.replace("@", "_at_")
                metrics[f"{d}.{key}"] = e.value
                metrics[f"{d}.{key}.ci_lo"] = e.lo
                metrics[f"{d}.{key}.ci_hi"] = e.hi
    if comparison is not None:
        for d, e in comparison.diffs.items():
            if not math.isnan(e.value):
                metrics[f"{d}.pass_at_1.diff_vs_baseline"] = e.value
    client.log_batch(run_id, metrics=[Metric(k, float(v), now, 0) for k, v in metrics.items()],
                     params=[Param(k, str(v)) for k, v in report.config.to_params().items()])
    with tempfile.TemporaryDirectory() as tmp:
        write_report(tmp, report, baseline, comparison)
        client.log_artifacts(run_id, tmp, artifact_path="eval_report")
    client.set_terminated(run_id)
    return run_id
