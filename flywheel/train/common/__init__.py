"""What both training stages share: placement, optimizer and schedule, the backend (torch or DeepSpeed),
the fine-tuning step, checkpoints, the manifest, telemetry and the result shape."""
