"""The verdict every verifier returns (defined with the environment protocol, `flywheel.environments.verdict`)."""

from flywheel.environments.verdict import Verdict, VerifierInfraError

__all__ = ["Verdict", "VerifierInfraError"]
