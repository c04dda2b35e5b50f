"""flywheel.evaluation."""
