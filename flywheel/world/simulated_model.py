"""The SIMULATED production model: a made-up champion whose failures look like a real model's.

Nothing here is real user data or a real model. `SimulatedResponder` picks a success probability
per task (from the task's difficulty, `meta` level / family / changes, plus a fixed per-task
offset, so some tasks are always solved, some never, many in between) and writes a response
consistent with the drawn outcome: wrong answers, no final answer, runtime errors with real Python
tracebacks, timeouts, illegal tool calls and refusals (each domain's `production` profile, in its
environment, says how: `flywheel.environments.production`). A logged failure really fails under the
task's reference (the code really raises, the tool calls really miss the goal), which is what lets
verifiers be checked against logged failures. Each response's `meta` (`failure_mode`,
`p_success`) is the generator's ground truth, which mining never reads but tests compare against.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from flywheel.environments.production import ProductionProfile
from flywheel.environments.registry import default_environments
from flywheel.environments.task import Task
from flywheel.world.responder import Response

SIMULATED_MODEL = "simulated-prod:v1"
FAILURE_MODES: tuple[str, ...] = (
    "wrong_answer", "format_error", "runtime_error", "timeout", "invalid_tool_call", "refused",
)
"""The failure classes the simulator produces; the same names as mining's taxonomy."""


def _profile(domain: str) -> ProductionProfile | None:
    envs = default_environments()
    return envs.for_domain(domain).production if envs.has_domain(domain) else None


def _serving(domain: str) -> ProductionProfile:
    prof = _profile(domain)
    if prof is None:
        raise ValueError(f"domain {domain!r} has no simulated production (its environment's `production` is None)")
    return prof


def task_difficulty(task: Task) -> float:
    """0 (easy) .. 1 (hard) from the domain's own knobs (math level, code family, agent changes); 0.5 for a
    domain without a production profile."""
    prof = _profile(task.domain)
    return prof.difficulty(task) if prof else 0.5


@dataclass(frozen=True)
class SimulatedResponder:
    """A made-up production model. Not a model: it picks a success probability per task and
    writes a response consistent with the drawn outcome.

    `p_success(task) = sigmoid(base[domain] + skill - 4 * difficulty + offset(task))` with a
    fixed per-task offset ~ N(0, 2) (seeded by `seed` and the task id, so a task is equally hard
    every day), clipped to exactly 0 below 3% and 1 above 97%: some tasks are always solved,
    some never. `skill` shifts the whole model (a better champion has a higher skill).
    """

    model: str = SIMULATED_MODEL
    skill: float = 0.0
    seed: int = 0

    def p_success(self, task: Task) -> float:
        key = (task.meta or {}).get("variant_of", task.task_id)
        offset = random.Random(f"{self.seed}:{key}").gauss(0.0, 2.0)
        prof = _profile(task.domain)
        z = (prof.base_logit if prof else 1.0) + self.skill - 4.0 * task_difficulty(task) + offset
        p = 1.0 / (1.0 + math.exp(-z))
        return 0.0 if p < 0.03 else 1.0 if p > 0.97 else p

    def __call__(self, task: Task, rng: random.Random) -> Response:
        p = self.p_success(task)
        if rng.random() < p:
            mode = "success"
        else:
            weights = _serving(task.domain).failure_weights
            mode = rng.choices(list(weights), list(weights.values()))[0]
        messages, outcome = _serving(task.domain).respond(task, mode, rng)
        return Response(messages, outcome, self.model, {"failure_mode": None if mode == "success" else mode,
                                                         "p_success": round(p, 4)})
