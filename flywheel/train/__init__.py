"""RLVR training: GRPO over verifiable rewards (see docs/training.md).

Public API: `GRPOConfig` (config.py, its defaults the measured recipe), `train_rlvr` /
`RunInputs` / `TrainResult` (trainer.py), `train_policy` / `load_training_tasks` /
`policy_dir` (api.py). Inside: `step` (one step's batch, update, metrics), `scheduler`
(which tasks), `backend` (torch or DeepSpeed update), `pipeline`, `checkpoint`, `telemetry`,
`manifest`.
"""
