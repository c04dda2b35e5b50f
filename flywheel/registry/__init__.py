"""flywheel.registry."""
