"""flywheel.registry: the MLflow model registry as the record of what is deployed.

- `mlflow_registry.Registry` (versions with lineage tags, `champion` alias, history),
  `GateConfig`, `promote_if_better(...) -> PromotionDecision`, `rollback(...)`
- `candidate.evaluate_candidate(...) -> CandidateEval` (candidate vs the champion on the same tasks;
  the base model becomes the first champion)
- `deploy.deploy_candidate(...) -> DeploymentResult` (register + snapshot + manifest + gate)
- `serving.serving_manifest(...)` (vLLM `serve` args: default and fast variants)
- `releases.discover_releases(dir)` (base-model checkpoints for the release sensor)
- `links.run_url(...)`, `links.model_version_url(...)` (MLflow UI pages for Dagster metadata),
  `links.ensure_experiment(...)` (experiments with their descriptions)
"""
