"""The canary in production: the candidate answers a share of the day's requests in shadow beside the champion.

`ShadowResponder` is a `BatchResponder` for the day's log writer: the champion answers every request and
only its answers are served and logged; for a seeded `share` of the requests the candidate answers too,
both verified by their own responders, and the paired outcomes are kept (`pairs`) and can be written as
JSONL for the gate's caller (`flywheel.monitoring.canary.canary_verdict`). The candidate never reaches a
user and its answers never become training data.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from flywheel.environments.task import Task
from flywheel.monitoring.canary import CanaryConfig, Pair
from flywheel.world.responder import BatchResponder, Response


def _answer(responder: BatchResponder, tasks: Sequence[Task], rng: random.Random) -> list[Response]:
    if hasattr(responder, "respond_batch"):
        return responder.respond_batch(tasks, rng)
    return [responder(t, rng) for t in tasks]


class ShadowResponder:
    """Serves the champion's answers; the candidate shadows `config.share` of the requests."""

    def __init__(self, champion: BatchResponder, candidate: BatchResponder, config: CanaryConfig | None = None):
        self.champion, self.candidate = champion, candidate
        self.config = config or CanaryConfig()
        self.pairs: list[Pair] = []

    def respond_batch(self, tasks: Sequence[Task], rng: random.Random) -> list[Response]:
        served = _answer(self.champion, tasks, rng)
        pick = random.Random(f"canary:{self.config.seed}:{len(self.pairs)}:{len(tasks)}")
        shadow = [i for i in range(len(tasks)) if pick.random() < self.config.share]
        shadow_rng = random.Random(f"canary-sampling:{self.config.seed}:{len(self.pairs)}")  # not the day's rng
        answers = _answer(self.candidate, [tasks[i] for i in shadow], shadow_rng)
        for i, ans in zip(shadow, answers, strict=True):
            self.pairs.append(Pair(tasks[i].task_id, tasks[i].domain, bool(served[i].outcome.get("passed")),
                                   bool(ans.outcome.get("passed"))))
        return served

    def __call__(self, task: Task, rng: random.Random) -> Response:
        return self.respond_batch([task], rng)[0]

    def write_pairs(self, path: str | Path) -> Path:
        """The paired outcomes as JSONL (one line per shadowed request)."""
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("".join(json.dumps(asdict(x)) + "\n" for x in self.pairs))
        return p


def read_pairs(path: str | Path) -> list[Pair]:
    """Pairs written by `ShadowResponder.write_pairs`."""
    return [Pair(**json.loads(line)) for line in Path(path).read_text().splitlines() if line.strip()]
