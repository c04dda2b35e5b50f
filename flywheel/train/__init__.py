"""RLVR training: GRPO over verifiable rewards (see docs/training.md).

Public API: `GRPOConfig` (config.py), `train_rlvr` / `TrainResult` (trainer.py),
`train_policy` / `load_training_tasks` / `policy_dir` (api.py).
"""
