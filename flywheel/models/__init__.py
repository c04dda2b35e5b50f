"""flywheel.models."""
