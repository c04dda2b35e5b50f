"""The whole plug-in: the RFT job's three files, read by flywheel's GradedEnvironment."""

from pathlib import Path

from flywheel.verifiers.graders.environment import GradedEnvironment

HERE = Path(__file__).parent


def environment():
    return GradedEnvironment.from_files("faq", HERE / "job.json", HERE / "train.jsonl", HERE / "valid.jsonl")
