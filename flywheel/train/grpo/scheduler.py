"""Which tasks the next RL step trains on: domain mix, difficulty, and dynamic sampling.

- Domains are mixed by configurable weights (a small share of the other domains keeps
  them from being forgotten while one is pushed).
- Within a domain, a task is drawn with a weight that peaks when its running pass rate
  is near the target (50%: most GRPO signal) and falls off for always-solved and
  never-solved tasks, floored so they are still revisited now and then.
- Dynamic sampling (DAPO): a group whose rewards are all equal has zero advantage; it is
  dropped before the update and the batch is refilled by oversampling new tasks.
- Sources: a task's `meta["source"]` says where it came from (`pool`: mined from the logs;
  `replay`: the domain's train suite). Where a domain has both, a draw takes replay with
  probability `replay_share`, so a small mined slice is never all a run trains on.
- Cap: a task is drawn only while its next group keeps it within `max_samples` responses in
  this run (memorising a few tasks is what a small pool and many steps otherwise do).

Running pass rates are an EMA per task; they seed from the warehouse's difficulty
history (`pass_rates=`) and go back into checkpoints (`state_dict`), so a resumed run
and a new base model start from what earlier runs found hard.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from flywheel.rollout.types import Rollout
from flywheel.tasks.base import Task
from flywheel.tasks.sources import GIVEN, POOL, REPLAY, source_of
from flywheel.train.grpo.loss import groups_with_signal


@dataclass
class Group:
    """The `group_size` rollouts of one task, with their rewards (verdicts already attached)."""

    task: Task
    rollouts: list[Rollout]

    @property
    def rewards(self) -> list[float]:
        return [float(r.verdict.reward) if r.verdict is not None else float("nan") for r in self.rollouts]

    @property
    def passes(self) -> list[bool]:
        return [bool(r.verdict.passed) if r.verdict is not None else False for r in self.rollouts]

    def has_signal(self) -> bool:
        return groups_with_signal(self.rewards)


@dataclass
class BatchStats:
    """What collecting one batch cost: groups generated, dropped for zero signal, rounds used."""

    generated_groups: int = 0
    dropped_groups: int = 0
    rounds: int = 0
    short_by: int = 0
    per_round: list[int] = field(default_factory=list)

    @property
    def dropped_share(self) -> float:
        return self.dropped_groups / self.generated_groups if self.generated_groups else 0.0


def pool_failure_weights(tasks: Sequence[Task], weights: Mapping[str, float], floor: float = 0.1) -> dict[str, float]:
    """Each weighted domain's share of the mined pool's tasks (the pool is the logged failures), floored at
    `floor` times its configured share so a domain without failures is not forgotten. Without a pool:
    `weights` unchanged."""
    counts: dict[str, int] = {}
    for t in tasks:
        if source_of(t) == POOL and weights.get(t.domain, 0) > 0:
            counts[t.domain] = counts.get(t.domain, 0) + 1
    total, wsum = sum(counts.values()), sum(w for w in weights.values() if w > 0)
    if not total or wsum <= 0:
        return dict(weights)
    return {d: max(counts.get(d, 0) / total, floor * w / wsum) for d, w in weights.items() if w > 0}


class TaskScheduler:
    """Samples tasks by domain weight and difficulty; tracks running pass rates."""

    def __init__(
        self,
        tasks: Sequence[Task],
        domain_weights: Mapping[str, float],
        seed: int = 0,
        pass_rates: Mapping[str, float] | None = None,
        target: float = 0.5,
        sharpness: float = 4.0,
        min_weight: float = 0.05,
        prior: float = 0.5,
        momentum: float = 0.5,
        adaptive_prior: bool = False,
        max_samples: int = 0,
        group_size: int = 1,
        replay_share: float = 0.5,
        domain_mix: str = "weights",
    ) -> None:
        self.by_domain: dict[str, list[Task]] = {}
        for t in tasks:
            self.by_domain.setdefault(t.domain, []).append(t)
        for d in self.by_domain:
            self.by_domain[d].sort(key=lambda t: t.task_id)  # order-independent sampling
        if domain_mix == "pool_failures":
            domain_weights = pool_failure_weights(tasks, domain_weights)
        elif domain_mix != "weights":
            raise ValueError(f"domain_mix must be 'weights' or 'pool_failures', got {domain_mix!r}")
        self.domain_weights = {
            d: float(w) for d, w in sorted(domain_weights.items()) if w > 0 and self.by_domain.get(d)
        }
        if not self.domain_weights:
            have = sorted(self.by_domain)
            raise ValueError(f"no tasks for any weighted domain {dict(domain_weights)}; task pool has {have}")
        self.seed = seed
        self.target, self.sharpness, self.min_weight = target, sharpness, min_weight
        self.prior, self.momentum, self.adaptive_prior = prior, momentum, adaptive_prior
        self.max_samples, self.group_size, self.replay_share = max_samples, max(1, group_size), replay_share
        self.domain_of = {t.task_id: t.domain for t in tasks}
        self.source_of = {t.task_id: source_of(t) for t in tasks}
        self._domain_sum: dict[str, float] = {}
        self._domain_n: dict[str, int] = {}
        self.pass_rates: dict[str, float] = dict(pass_rates or {})
        self.attempts: dict[str, int] = {}
        self.passes: dict[str, int] = {}

    # --- difficulty ---------------------------------------------------------------
    def pass_rate(self, task_id: str) -> float:
        """The task's running pass rate; unseen tasks get the prior (with `adaptive_prior`: the
        domain's observed mean, so a weak model is not steered to a flood of hopeless new tasks)."""
        if task_id in self.pass_rates:
            return self.pass_rates[task_id]
        if self.adaptive_prior:
            d = self.domain_of.get(task_id, "")
            if self._domain_n.get(d):
                return self._domain_sum[d] / self._domain_n[d]
        return self.prior

    def task_weight(self, task_id: str) -> float:
        """exp(-sharpness * ((p - target) / 0.5)^2), floored: 1 at the target, small at 0 and 1."""
        p = self.pass_rate(task_id)
        w = math.exp(-self.sharpness * ((p - self.target) / 0.5) ** 2)
        return max(self.min_weight, w)

    def update(self, task_id: str, passes: Sequence[bool]) -> None:
        """Fold one group's results into the task's running pass rate (EMA)."""
        if not passes:
            return
        rate = sum(1 for p in passes if p) / len(passes)
        d = self.domain_of.get(task_id, "")
        self._domain_sum[d] = self._domain_sum.get(d, 0.0) + rate * len(passes)
        self._domain_n[d] = self._domain_n.get(d, 0) + len(passes)
        if task_id in self.pass_rates:
            rate = self.momentum * self.pass_rates[task_id] + (1 - self.momentum) * rate
        self.pass_rates[task_id] = rate
        self.attempts[task_id] = self.attempts.get(task_id, 0) + len(passes)
        self.passes[task_id] = self.passes.get(task_id, 0) + sum(1 for p in passes if p)

    def capped(self, task_id: str, planned: int = 0) -> bool:
        """Whether one more group (after `planned` groups already picked) would pass `max_samples`."""
        if not self.max_samples:
            return False
        return self.attempts.get(task_id, 0) + (planned + 1) * self.group_size > self.max_samples

    def exhausted(self) -> bool:
        """Every task of every weighted domain is at its cap: nothing is left to train on."""
        return all(self.capped(t.task_id) for d in self.domain_weights for t in self.by_domain[d])

    def source_counts(self) -> dict[str, int]:
        """`tasks/<source>` (distinct tasks sampled) and `samples/<source>` (responses) so far."""
        out: dict[str, int] = {}
        for task_id, n in self.attempts.items():
            src = self.source_of.get(task_id, GIVEN)
            out[f"tasks/{src}"] = out.get(f"tasks/{src}", 0) + 1
            out[f"samples/{src}"] = out.get(f"samples/{src}", 0) + n
        return out

    # --- sampling -----------------------------------------------------------------
    def _rng(self, step: int, round_idx: int) -> random.Random:
        # a string seed hashes the same on every machine and Python run
        return random.Random(f"scheduler:{self.seed}:{step}:{round_idx}")

    def sample(self, n: int, step: int, round_idx: int = 0, exclude: set[str] | None = None) -> list[Task]:
        """`n` tasks for one step, distinct within the call, deterministic in (seed, step, round)."""
        rng = self._rng(step, round_idx)
        chosen: set[str] = set(exclude or ())
        eligible = {d: [t for t in self.by_domain[d] if t.task_id not in chosen and not self.capped(t.task_id)]
                    for d in self.domain_weights}
        # fractional domain shares: draw each slot's domain by weight (a 5% domain appears in ~5% of slots);
        # a domain whose tasks are all capped gives its slots to the others
        names = [d for d in self.domain_weights if eligible[d]]
        if not names:
            return []
        weights = [self.domain_weights[d] for d in names]
        slots = rng.choices(names, weights=weights, k=n)
        out: list[Task] = []
        for d in names:
            k = slots.count(d)
            replay = [t for t in eligible[d] if self.source_of[t.task_id] == REPLAY]
            rest = [t for t in eligible[d] if self.source_of[t.task_id] != REPLAY]
            if k and replay and rest:  # both sources left: each draw takes replay with probability replay_share
                k_replay = sum(rng.random() < self.replay_share for _ in range(k))
                out.extend(self._weighted_without_replacement(replay, k_replay, rng))
                out.extend(self._weighted_without_replacement(rest, k - k_replay, rng))
            else:
                out.extend(self._weighted_without_replacement(eligible[d], k, rng))
        rng.shuffle(out)
        return out

    def _weighted_without_replacement(self, pool: list[Task], k: int, rng: random.Random) -> list[Task]:
        """Efraimidis-Spirakis: key u^(1/w), take the k largest."""
        if k <= 0 or not pool:
            return []
        keyed = [(rng.random() ** (1.0 / self.task_weight(t.task_id)), t) for t in pool]
        keyed.sort(key=lambda kt: -kt[0])
        picked = [t for _, t in keyed[:k]]
        uses = {t.task_id: 1 for t in picked}
        while len(picked) < k:  # pool smaller than k: repeat tasks (within their cap) rather than shrink the batch
            room = [t for t in pool if not self.capped(t.task_id, uses[t.task_id])]
            if not room:
                break
            t = rng.choice(room)
            picked.append(t)
            uses[t.task_id] += 1
        return picked

    # --- dynamic sampling ----------------------------------------------------------
    def collect(
        self,
        n_groups: int,
        step: int,
        rollout_fn: Callable[[list[Task]], list[Group]],
        dynamic: bool = True,
        max_refill_rounds: int = 3,
    ) -> tuple[list[Group], BatchStats]:
        """Generate groups until `n_groups` have signal (or the refill rounds run out).

        Every generated group updates the pass rates, kept or not. Refill rounds oversample
        by the observed keep rate so one extra round usually suffices.
        """
        kept: list[Group] = []
        stats = BatchStats()
        seen: set[str] = set()
        keep_rate = 1.0
        for round_idx in range(max_refill_rounds + 1 if dynamic else 1):
            missing = n_groups - len(kept)
            if missing <= 0:
                break
            ask = missing if round_idx == 0 else min(4 * missing, math.ceil(missing / max(keep_rate, 0.25)))
            tasks = self.sample(ask, step, round_idx, exclude=seen)
            if not tasks:
                break
            seen.update(t.task_id for t in tasks)
            groups = rollout_fn(tasks)
            stats.rounds += 1
            stats.generated_groups += len(groups)
            stats.per_round.append(len(groups))
            n_signal = 0
            for g in groups:
                self.update(g.task.task_id, g.passes)
                if not dynamic or g.has_signal():
                    n_signal += 1
                    if len(kept) < n_groups:
                        kept.append(g)
                else:
                    stats.dropped_groups += 1
            keep_rate = n_signal / len(groups) if groups else 0.0
        stats.short_by = max(0, n_groups - len(kept))
        return kept, stats

    # --- persistence ---------------------------------------------------------------
    def state_dict(self) -> dict:
        return {"pass_rates": dict(self.pass_rates), "attempts": dict(self.attempts), "passes": dict(self.passes),
                "seed": self.seed,
                "domain_sum": dict(self._domain_sum), "domain_n": dict(self._domain_n)}

    def load_state_dict(self, state: Mapping) -> None:
        self.pass_rates = dict(state.get("pass_rates", {}))
        self.attempts = dict(state.get("attempts", {}))
        self.passes = dict(state.get("passes", {}))
        self._domain_sum = dict(state.get("domain_sum", {}))
        self._domain_n = dict(state.get("domain_n", {}))
