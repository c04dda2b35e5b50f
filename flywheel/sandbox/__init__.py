"""flywheel.sandbox."""
