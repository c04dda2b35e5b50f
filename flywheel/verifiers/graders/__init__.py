"""OpenAI-style grader specs as flywheel verifiers (see `verifier.py`; docs/verifiers.md has a migration example).

    spec = load_spec("grader.json")          # a grader object, or an RFT job body holding one
    verdict = GraderVerifier(spec).verify({"answer": "4", "solution": "4"}, "4")
"""

from flywheel.verifiers.graders.base import GraderConfig, Runtime
from flywheel.verifiers.graders.build import build_grader
from flywheel.verifiers.graders.verifier import GraderRegistry, GraderVerifier, load_spec

__all__ = ["GraderConfig", "GraderRegistry", "GraderVerifier", "Runtime", "build_grader", "load_spec"]
