"""flywheel.mining."""
