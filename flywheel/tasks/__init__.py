"""flywheel.tasks."""
