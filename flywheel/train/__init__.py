"""RLVR training: GRPO over verifiable rewards (see docs/training.md).

Public API: `GRPOConfig` (config.py, its defaults the measured recipe), `train_rlvr` /
`RunInputs` / `TrainResult` (trainer.py), `train_policy` / `policy_dir` (api.py). Inside:
`taskset` (the mined pool + replay from the train suites), `step` (one step's batch, update,
metrics), `scheduler` (which tasks, the per-task cap), `horizon` (the LR horizon a time budget
reaches), `dev` (dev split, best checkpoint, early stopping), `difficulty` (difficulty_history
read and write-back), `backend` (torch or DeepSpeed update), `pipeline`, `checkpoint`,
`telemetry`, `manifest`.
"""
