"""Evaluation end to end: real verifiers, the torch engine, metrics, paired comparison, report, MLflow."""

from __future__ import annotations

import json

import pytest

from flywheel.evaluation.report import bar_chart_png, log_to_mlflow, to_markdown, write_report
from flywheel.evaluation.runner import (
    EvalReport,
    compare,
    engine_generator,
    evaluate,
    report_from_dict,
)
from flywheel.evaluation.suites import EvalConfig, eval_tasks
from flywheel.rollout.types import Rollout, ToolStep
from flywheel.tasks.base import Task
from flywheel.tasks.suites import train_suite

SMALL = EvalConfig(n_samples=2, tasks_per_domain={"math": 6, "code": 3, "agent": 3}, n_boot=300, suites=("heldout",),
                   max_new_tokens=48, max_steps=3)


def _wrong(task: Task) -> str:
    if task.domain == "math":
        return f"Answer: {int(task.reference['answer']) + 1}"
    if task.domain == "code":
        return "```python\ndef nothing():\n    return None\n```"
    return '<tool_call>{"name":"finish","arguments":{}}</tool_call><tool_result>done</tool_result>'


def scripted(solves: set[str], second_sample_fails: bool = False):
    """A policy that answers gold for tasks in `solves`, a wrong answer otherwise (every sample)."""

    def generate(tasks, config):
        out = []
        for t in tasks:
            group = []
            for k in range(config.n_samples):
                good = t.task_id in solves and not (second_sample_fails and k == 1)
                text = t.solution if good else _wrong(t)
                steps = [ToolStep("c", "r")] * text.count("<tool_call>")
                group.append(Rollout(t.prompt, [1] * 10, [2] * 5, [0.0] * 5, [1] * 5, text, 0,
                                     t.task_id, t.domain, steps=steps))
            out.append(group)
        return out

    return generate


def test_scripted_policy_scored_by_real_verifiers():
    tasks = eval_tasks(SMALL)
    solves = {ts[0].task_id for ts in tasks.values()} | {tasks["math"][1].task_id}
    rep = evaluate(scripted(solves), SMALL, model="scripted",
                   train_prompts=[t.prompt for t in train_suite("math", 50)])
    rates = rep.pass_rates()  # rounded to 4 digits for printing
    assert rates["math"] == pytest.approx(2 / 6, abs=1e-4) and rates["code"] == pytest.approx(1 / 3, abs=1e-4)
    assert rates["agent"] == pytest.approx(1 / 3, abs=1e-4) and rates["overall"] == pytest.approx(4 / 12, abs=1e-4)
    m = rep.metrics["overall"]
    assert m["pass@1"].lo <= m["pass@1"].value <= m["pass@1"].hi and m["pass@1"].n == 12
    assert m["pass@2"].value == pytest.approx(4 / 12)
    assert m["tokens"].value == 15 and m["cost_usd"].value > 0 and m["latency_ms"].value >= 0
    assert rep.metrics["agent"]["steps"].value > 0
    assert rep.contamination is not None and rep.contamination.clean
    # half the samples of solved tasks fail: pass@1 halves, pass@2 stays
    flaky = evaluate(scripted(solves, second_sample_fails=True), SMALL, model="flaky")
    assert flaky.metrics["overall"]["pass@1"].value == pytest.approx(2 / 12)
    assert flaky.metrics["overall"]["pass@2"].value == pytest.approx(4 / 12)
    # paired comparison on the same tasks, and a regression flagged per domain
    worse = evaluate(scripted(solves - {tasks["code"][0].task_id}), SMALL, model="worse")
    c = compare(worse, rep, tolerance=0.05)
    assert c.diffs["code"].value == pytest.approx(-1 / 3) and c.regressions == ("code",)
    assert c.diffs["math"].value == 0 and c.diffs["overall"].n == 12
    assert report_from_dict(json.loads(json.dumps(rep.to_dict()))).pass_rates() == rates


def test_torch_engine_eval_report_and_mlflow(flywheel_home, seed_mlflow_db, random_tiny, tmp_path):
    import mlflow
    import torch

    from flywheel.rollout import build_engine

    torch.set_num_threads(1)
    seed_mlflow_db(flywheel_home)
    path = random_tiny(tmp_path / "tiny")
    cfg = EvalConfig(n_samples=2, tasks_per_domain={"math": 2, "code": 1, "agent": 2}, n_boot=200, suites=("heldout",),
                     max_new_tokens=24, max_steps=2)
    rep = evaluate(engine_generator(build_engine("torch", str(path))), cfg, model="random-tiny")
    assert isinstance(rep, EvalReport) and len(rep.tasks) == 5
    assert all(len(t.passed) == 2 for t in rep.tasks)
    assert rep.metrics["overall"]["tokens"].value > 0 and rep.metrics["overall"]["latency_ms"].value > 0

    base = evaluate(scripted(set()), cfg, model="base")
    cmp = compare(rep, base)
    png = bar_chart_png({"base": base, "candidate": rep})
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    md = to_markdown(rep, base, cmp, chart_png=png)
    assert "| overall |" in md and "data:image/png;base64," in md and "pass@2" in md
    files = write_report(tmp_path / "report", rep, base, cmp)
    assert files["chart"].read_bytes()[:4] == b"\x89PNG" and "![pass@1](pass_rates.png)" in files["markdown"].read_text()
    run_id = log_to_mlflow(rep, base, cmp, tracking_uri=flywheel_home.mlflow_uri,
                           artifact_location=flywheel_home.mlflow_artifacts.as_uri())
    client = mlflow.MlflowClient(flywheel_home.mlflow_uri)
    run = client.get_run(run_id)
    assert "1_pass_at_1/overall" in run.data.metrics and "overall.pass_at_1.ci_lo" in run.data.metrics
    assert run.data.params["eval_n_samples"] == "2"
    names = {f.path for f in client.list_artifacts(run_id, "eval_report")}
    assert {"eval_report/report.md", "eval_report/pass_rates.png", "eval_report/report.json"} <= names
