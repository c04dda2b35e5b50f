"""Verifiers: judge whether a response really solved its task.

Public API (what the trainer and evaluation call):

    from flywheel.verifiers import score, score_batch, make_reward_func, VerdictCache
    v = score("math", {"prompt": ..., "answer": "7"}, "... Answer: 7")       # -> Verdict
    vs = score_batch([(domain, task, response), ...], concurrency=4, cache=VerdictCache(con))
    reward_funcs = [make_reward_func()]                                       # TRL-style, list[float | None]

Each domain's verifier belongs to its environment (`flywheel/environments/<domain>/`); this package is the
machinery around them: batching, the verdict cache, the registry, construction/validation from `task_pool`
(`.construct.build_verifiers`).
"""

from typing import Any

from flywheel.verifiers.verdict import Verdict, VerifierInfraError

__all__ = [
    "Verdict", "VerifierInfraError", "TaskError", "score", "score_batch", "make_reward_func", "ScoreItem",
    "VerdictCache", "VerifierRegistry", "default_registry", "get_verifier",
]

_BATCH = ("score", "score_batch", "make_reward_func", "ScoreItem")


def __getattr__(name: str) -> Any:
    """Import the scoring machinery on first use, so `flywheel.verifiers.verdict` stays light."""
    if name in _BATCH:
        from flywheel.verifiers import batch

        return getattr(batch, name)
    if name == "VerdictCache":
        from flywheel.verifiers.cache import VerdictCache

        return VerdictCache
    if name in ("VerifierRegistry", "default_registry", "get_verifier"):
        from flywheel.verifiers import registry

        return getattr(registry, name)
    if name == "TaskError":
        from flywheel.environments.verdict import TaskError

        return TaskError
    raise AttributeError(f"module 'flywheel.verifiers' has no attribute {name!r}")
