"""Training: two stages on one stack (see docs/training.md).

`api` is the entry (`train_policy`: the task set, the stages `config.stage` chains, the write-back) and
`config` the run's config (`TrainConfig`). `common/`: what both stages share (placement, optimizer and
schedule, the torch/DeepSpeed backend, the fine-tuning step, the task set and dev split, rollouts and
scoring, difficulty write-back, checkpoints, manifest, telemetry, the result). `rft/`: rejection-sampling
fine-tuning (its config, candidate data, the run, the tracked stage). `grpo/`: the RL loop (trainer, step,
loss, scheduler, horizon, dev tracking, rollout pipeline, the vLLM generator).
"""
