"""flywheel.evaluation: held-out evaluation, end to end, with intervals.

- `suites.EvalConfig`, `suites.eval_tasks`, `suites.contamination`
- `metrics.pass_at_k`, `metrics.bootstrap_ci`, `metrics.paired_difference`
- `runner.evaluate_policy(model_path, config, model=...) -> EvalReport`, `runner.compare(cand, base) -> Comparison`
- `report.to_markdown`, `report.bar_chart_png`, `report.write_report`, `report.log_to_mlflow`
"""
