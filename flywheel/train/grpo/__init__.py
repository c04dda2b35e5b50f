"""The GRPO stage: the RL loop (scheduler, rollouts, group advantages, clipped update, dev split) on the shared
stack."""
