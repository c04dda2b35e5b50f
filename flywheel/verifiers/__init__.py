"""Verifiers: judge whether a response really solved its task."""

from flywheel.verifiers.verdict import Verdict, VerifierInfraError

__all__ = ["Verdict", "VerifierInfraError"]
