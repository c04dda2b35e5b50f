"""flywheel.evaluation: held-out evaluation, end to end, with intervals.

- `suites.EvalConfig` (`.seeded_from`: a turn's fresh shared seed), `suites.eval_tasks`, `suites.contamination`
- `metrics.pass_at_k`, `metrics.bootstrap_ci`, `metrics.paired_difference`
- `failures.failure_type`: why a sample failed (math: answer_mismatch / arithmetic / setup / format; code, agent:
  the verifier's reason class), counted per domain by `EvalReport.failure_counts`
- `runner.evaluate_policy(model_path, config, model=...) -> EvalReport`, `runner.compare(cand, base) -> Comparison`
- `report.to_markdown`, `report.bar_chart_png`, `report.write_report`, `report.log_to_mlflow`
"""
