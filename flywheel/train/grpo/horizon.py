"""How long a run is: the LR schedule's horizon, the time budget's clock, and the steps a budget reaches.

A cosine schedule over `cfg.steps` that a time budget cuts at step 40 of 120 never decays: the
run ends at a high LR it never meant to stop at. So when `time_budget_s` is set, the horizon
is re-estimated a few times early (after `CHECKS` steps) from the measured cost of a step
(and of the dev evaluations), as `min(cfg.steps, steps the remaining budget reaches)`, and the
run ends at that horizon. After the last check the horizon is fixed, so what a run trains
depends on its first steps' cost only; with `budget_clock="cpu"` that cost is this process's
CPU time, which other load on the machine barely changes (wall time does, a lot).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

CHECKS = (3, 6, 12, 24)
"""Steps done after which a budgeted run re-estimates its horizon (none later: the horizon then holds)."""


class BudgetClock:
    """Seconds spent against `time_budget_s`: wall (elapsed) or cpu (this process's CPU time, all threads)."""

    def __init__(self, kind: str = "wall") -> None:
        self.kind = kind
        self.start = self.now()

    def now(self) -> float:
        return time.process_time() if self.kind == "cpu" else time.perf_counter()

    def spent(self) -> float:
        return self.now() - self.start


@dataclass
class HorizonPlanner:
    """Re-estimates the horizon from measured step and dev-eval costs (in the budget's clock).

    `steps`: `cfg.steps`, the ceiling; `horizon` starts there and only a budget moves it.
    `step_costs` holds each step's cost (the first step, which warms caches up, is left out of
    the estimate once there are others); `eval_cost` the latest dev evaluation's cost.
    """

    steps: int
    budget_s: float
    warmup_steps: int = 0
    dev_every: int = 0
    horizon: int = 0
    step_costs: list[float] = field(default_factory=list)
    eval_cost: float = 0.0
    estimates: list[tuple[int, int]] = field(default_factory=list)  # (steps done, horizon)

    def __post_init__(self) -> None:
        self.horizon = self.horizon or self.steps

    def record_step(self, cost: float) -> None:
        self.step_costs.append(float(cost))

    def record_eval(self, cost: float) -> None:
        self.eval_cost = float(cost)

    def per_step(self) -> float:
        """A step's expected cost, dev evaluations amortised over `dev_every` steps."""
        costs = self.step_costs[1:] if len(self.step_costs) > 1 else self.step_costs
        mean = sum(costs) / len(costs) if costs else 0.0
        return mean + (self.eval_cost / self.dev_every if self.dev_every else 0.0)

    def reachable(self, done: int, spent: float) -> int:
        """Steps the budget reaches: the ones done plus what the remaining budget buys at `per_step`."""
        cost = self.per_step()
        if cost <= 0:
            return self.steps
        left = max(0.0, self.budget_s - spent - self.eval_cost)  # keep room for the final dev score
        return done + int(left / cost)

    def maybe_update(self, done: int, spent: float) -> int | None:
        """At a check point of a budgeted run: the new horizon (at least one step more, at most
        `steps`, past warmup); None when nothing is re-estimated."""
        if not self.budget_s or done not in CHECKS or done >= self.horizon:
            return None
        new = min(self.steps, max(done + 1, self.warmup_steps + 1, self.reachable(done, spent)))
        self.horizon = new
        self.estimates.append((done, new))
        return new

    def state_dict(self) -> dict[str, Any]:
        return {"horizon": self.horizon, "step_costs": list(self.step_costs), "eval_cost": self.eval_cost,
                "estimates": [list(e) for e in self.estimates]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.horizon = int(state.get("horizon", self.horizon))
        self.step_costs = list(state.get("step_costs", []))
        self.eval_cost = float(state.get("eval_cost", 0.0))
        self.estimates = [tuple(e) for e in state.get("estimates", [])]  # type: ignore[misc]
