"""flywheel: a data flywheel for LLM post-training."""

__version__ = "0.1.0"
