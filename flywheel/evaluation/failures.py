"""Why a sample failed: one failure type per failing sample, so a report can show what training changed.

The environment serving the domain says (`Environment.failure_type`): math reads the response itself
(answer mismatch against the scratchpad, arithmetic, setup), code and agent reduce the verifier's reason
to a class, and an installed environment gives its verdict's own label or its reason's head.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from flywheel.environments.base import verdict_label
from flywheel.environments.registry import default_environments
from flywheel.environments.verdict import Verdict


def failure_type(domain: str, task: dict, response: str, verdict: Verdict) -> str:
    """"" for a passing sample; else why it failed, as the domain's environment labels it."""
    if verdict.passed:
        return ""
    envs = default_environments()
    if envs.has_domain(domain):
        return envs.for_domain(domain).failure_type(task, response, verdict)
    return verdict_label(verdict)


def count_failures(types: Iterable[str]) -> dict[str, int]:
    """Failing samples per type, most frequent first (passing samples, "", are not counted)."""
    return dict(Counter(t for t in types if t).most_common())
