"""Verifiers: judge whether a response really solved its task.

Public API (what the trainer and evaluation call):

    from flywheel.verifiers import score, score_batch, make_reward_func, VerdictCache
    v = score("math", {"prompt": ..., "answer": "7"}, "... Answer: 7")       # -> Verdict
    vs = score_batch([(domain, task, response), ...], concurrency=4, cache=VerdictCache(con))
    reward_funcs = [make_reward_func()]                                       # TRL-style, list[float | None]

Per-domain verifiers: `flywheel.verifiers.math.MathVerifier`, `.code.CodeVerifier`,
`.agent.AgentVerifier`; construction/validation from `task_pool`: `.construct.build_verifiers`.
"""

from typing import Any

from flywheel.verifiers.verdict import Verdict, VerifierInfraError

__all__ = [
    "Verdict", "VerifierInfraError", "TaskError", "score", "score_batch", "make_reward_func", "ScoreItem",
    "VerdictCache", "VerifierRegistry", "default_registry", "get_verifier",
]

_LAZY = {
    "TaskError": "flywheel.verifiers.common",
    "score": "flywheel.verifiers.batch",
    "score_batch": "flywheel.verifiers.batch",
    "make_reward_func": "flywheel.verifiers.batch",
    "ScoreItem": "flywheel.verifiers.batch",
    "VerdictCache": "flywheel.verifiers.cache",
    "VerifierRegistry": "flywheel.verifiers.registry",
    "default_registry": "flywheel.verifiers.registry",
    "get_verifier": "flywheel.verifiers.registry",
}


def __getattr__(name: str) -> Any:
    """Import the scoring machinery on first use, so `flywheel.verifiers.verdict` stays light."""
    if name in _LAZY:
        import importlib  # module-level __getattr__: the lazy import itself

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'flywheel.verifiers' has no attribute {name!r}")
