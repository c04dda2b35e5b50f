"""RFT's per-step curves, for its MLflow run: what the sampling round found as it went, and the fine-tuning.

RFT samples and judges every candidate first, then fine-tunes; a run logged only its totals showed a single
dot per chart. Two walks give curves instead:

- `sampling_curve`: the candidates in the order they were judged (logged responses first, then the policy's
  samples, domain by domain), cumulative at up to `POINTS` evenly spaced points: the policy's pass share overall
  and per domain, the kept share, and every `RftCounts` count. Its step is the number of candidates judged so
  far, and its last point equals the run's totals (`RftCounts`, `stage.pass_rates`). It also carries
  `samples/finished_share` (the policy's samples that ended on their own, not cut off by the token budget:
  the name GRPO logs it under, so the training checks judge both stages alike).
- `finetune_curve`: per optimizer step, the loss, the learning rate the schedule gave that step, and the epoch
  (examples seen / examples kept).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

POINTS = 50
"""Most points of the sampling curve (evenly spaced over the candidates judged)."""

CURVE_COUNTS = ("verified", "sampled", "passed", "truncated", "duplicates", "capped", "examples",
                "tasks_with_examples", "log_candidates", "log_passed")
"""`RftCounts` fields the sampling curve follows (as `rft/<count>`); `tasks` is the run's choice, logged once."""


def sampling_curve(candidates: Sequence[Any], max_per_task: int, points: int = POINTS) -> list[dict[str, float]]:
    """Cumulative counts and shares over `candidates` (judged `data.Candidate`s, in judging order), each point
    `{"step": candidates judged so far, "pass_rate", "pass_rate/<domain>", "kept_rate", "rft/<count>", ...}`.
    Kept follows `data.select_examples`: passing, complete, distinct, at most `max_per_task` per task."""
    n = len(candidates)
    if not n:
        return []
    every = max(1, math.ceil(n / points))
    c = dict.fromkeys(CURVE_COUNTS, 0)
    attempts: dict[str, list[int]] = {}  # domain -> [policy samples, passing ones]
    distinct: dict[str, int] = {}
    seen: set[tuple[str, str]] = set()
    out: list[dict[str, float]] = []
    cut_off = 0  # policy samples cut off by the token budget, passing or not
    for i, cand in enumerate(candidates, 1):
        task, passed = cand.task, cand.verdict is not None and cand.verdict.passed
        c["verified"] += 1
        if cand.source == "logs":
            c["log_candidates"] += 1
            c["log_passed"] += passed
        else:
            c["sampled"] += 1
            a = attempts.setdefault(task.domain, [0, 0])
            a[0], a[1] = a[0] + 1, a[1] + passed
            cut_off += bool(cand.truncated)
        if passed:
            c["passed"] += 1
            if cand.truncated:
                c["truncated"] += 1
            elif (task.task_id, cand.response) in seen:
                c["duplicates"] += 1
            else:
                seen.add((task.task_id, cand.response))
                distinct[task.task_id] = distinct.get(task.task_id, 0) + 1
        if i % every == 0 or i == n:
            point = _point(i, c, attempts, distinct, max_per_task)
            if c["sampled"]:
                point["samples/finished_share"] = 1 - cut_off / c["sampled"]
            out.append(point)
    return out


def _point(step: int, c: dict[str, int], attempts: dict[str, list[int]], distinct: dict[str, int],
           cap: int) -> dict[str, float]:
    kept = sum(min(k, cap) for k in distinct.values())
    counts = {**c, "examples": kept, "capped": sum(max(0, k - cap) for k in distinct.values()),
              "tasks_with_examples": len(distinct)}
    point: dict[str, float] = {"step": float(step), **{f"rft/{k}": float(v) for k, v in counts.items()},
                               "kept_rate": kept / c["verified"]}
    tries, passes = sum(a for a, _ in attempts.values()), sum(p for _, p in attempts.values())
    if tries:
        point["pass_rate"] = passes / tries
        point.update({f"pass_rate/{d}": p / a for d, (a, p) in sorted(attempts.items()) if a})
    return point


def finetune_curve(losses: Sequence[float], lr_at: Any, batch_size: int, examples: int) -> list[dict[str, float]]:
    """Per optimizer step (1-based): `rft/loss`, `rft/lr` (`lr_at(step0)`, the schedule's rate for that step)
    and `rft/epoch` (passes over the `examples` kept, at the step's end)."""
    return [{"step": float(i + 1), "rft/loss": float(loss), "rft/lr": float(lr_at(i)),
             "rft/epoch": (i + 1) * batch_size / max(1, examples)} for i, loss in enumerate(losses)]
