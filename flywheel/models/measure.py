"""Build-time measurement of a base model: held-out pass@1, pass@k and greedy pass rate per domain.

Samples with the torch rollout engine and judges every response with the project's
verifiers (code runs in the sandbox), so a base model is scored exactly as evaluation and
training score it; pass@k is `flywheel.evaluation.metrics.pass_at_k`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from flywheel.evaluation.metrics import pass_at_k
from flywheel.rollout import generate_for_tasks
from flywheel.rollout.torch_engine import TorchEngine
from flywheel.rollout.types import SamplingParams
from flywheel.tasks.base import Task
from flywheel.tasks.suites import heldout_suite
from flywheel.verifiers import score_batch


def judge(tasks: Sequence[Task], responses: Sequence[tuple[int, str]]) -> list[bool]:
    """Pass/fail of (task index, response) pairs through the verifiers.

    Identical pairs are judged once (a tiny model repeats itself a lot). A verifier
    infrastructure error raises (after the verifiers' own retries): it is never a failed sample.
    """
    uniq = sorted(set(responses))
    verdicts = score_batch([(tasks[i].domain, tasks[i].verifier_task(), r) for i, r in uniq], concurrency=2)
    passed = {k: bool(v.passed) for k, v in zip(uniq, verdicts, strict=True)}
    return [passed[x] for x in responses]


def measure_pass_rates(model: Any, tokenizer: Any, n: int, k: int, seed: int = 0,
                       domains: tuple[str, ...] = ("math", "code", "agent"), temperature: float = 1.0,
                       max_new_tokens: int = 160) -> dict[str, dict[str, float]]:
    """Held-out pass@1 (mean over k samples at `temperature`), pass@k, and greedy pass rate per domain."""
    engine = TorchEngine(model, tokenizer)
    out: dict[str, dict[str, float]] = {}
    for d in domains:
        tasks = heldout_suite(d)[:n]
        sp = SamplingParams(temperature=temperature, max_new_tokens=max_new_tokens, seed=seed)
        rs = generate_for_tasks(engine, tasks, k, sp)
        greedy = generate_for_tasks(engine, tasks, 1, SamplingParams(temperature=0.0, max_new_tokens=max_new_tokens))
        ok = judge(tasks, [(r.group_id, r.text) for r in rs + greedy])
        sampled, gok = ok[: len(rs)], ok[len(rs):]
        per_task = [sampled[i * k:(i + 1) * k] for i in range(len(tasks))]
        out[d] = {
            "pass@1": round(sum(sampled) / max(1, len(sampled)), 4),
            f"pass@{k}": round(sum(pass_at_k(k, sum(x), k) for x in per_task) / max(1, len(tasks)), 4),
            "greedy": round(sum(gok) / max(1, len(tasks)), 4),
            "n_tasks": len(tasks),
        }
    return out
