"""flywheel.train."""
