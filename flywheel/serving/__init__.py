"""flywheel.serving: the deployed champion answering production traffic (`champion.py`)."""
