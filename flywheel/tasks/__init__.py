"""flywheel.tasks: the task suites (math, code, agent), the responder seam and the SIMULATED traffic generator."""
