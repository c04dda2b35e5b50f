"""The rollout fleet: N replicas of the policy's engine as Ray actors, each tagged with its policy version.

    factory = RolloutFleet.factory(FleetConfig(rollout_actors=2))
    train_rlvr(cfg, inputs, generator_factory=factory)   # the trainer builds, syncs and closes it

It has `PolicyGenerator`'s interface. `sync(module, version)` puts the trainer's weights in the Ray
object store once and every actor loads them from there (actors run their calls in order, so a
`generate` submitted after `sync` samples the new weights). `generate` splits the tasks into one
contiguous share per actor (each share with its own seed) and returns the groups in task order; each
rollout carries the version its actor held, and a rollout whose version is not the one last synced
fails the call (the trainer's staleness bound holds only if versions are true). Actors live in one
placement group (`rollout_actors` bundles of `actor_cpus` CPU and `rollout_gpus` GPU); one that dies
is replaced with the current weights and its share resubmitted.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import ray
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

from flywheel.fleet.actors import ACTOR_DEATH, ActorSlots, BusyMeter, placement_group_for, run_jobs
from flywheel.fleet.config import FleetConfig, FleetError
from flywheel.rollout.types import Rollout, SamplingParams
from flywheel.tasks.base import Task


class RolloutWorker:
    """One rollout actor: a copy of the policy in a `PolicyGenerator` (torch engine) and its version."""

    def __init__(self, model: Any, tokenizer: Any, device: str, threads: int) -> None:
        import torch

        from flywheel.train.common.rollouts import PolicyGenerator

        torch.set_num_threads(threads)
        self.gen = PolicyGenerator(model.to(device).eval(), tokenizer, device, shared=True)
        self.busy = BusyMeter()

    def load(self, state: dict[str, Any], version: int) -> int:
        """The trainer's weights from the object store, tagged `version`."""
        self.gen.engine.update_weights(state, version)
        self.gen.version = int(version)
        return self.gen.version

    def generate(self, tasks: list[Task], n: int, sampling: SamplingParams,
                 max_tool_steps: int) -> tuple[list[list[Rollout]], float]:
        with self.busy:
            out = self.gen.generate(tasks, n, sampling, max_tool_steps)
        return out, self.busy.now_s()


class RolloutFleet:
    """A trainer generator (`engine.pad_id`, `version`, `sync`, `generate`, `close`) over Ray actors."""

    def __init__(self, module: Any, tokenizer: Any, config: FleetConfig | None = None) -> None:
        self.config = cfg = config or FleetConfig(rollout_actors=2)
        if cfg.rollout_actors < 1:
            raise ValueError("RolloutFleet needs rollout_actors >= 1 (0 means: sample in process, without a fleet)")
        if not ray.is_initialized():
            raise FleetError("RolloutFleet: Ray is not connected (ray.init(...) or the `ray` resource first)")
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        self.engine = SimpleNamespace(pad_id=pad)  # what the trainer reads of the engine
        self.version = 0
        self.versions_seen: set[int] = set()
        model = copy.deepcopy(module).to("cpu").eval().requires_grad_(False)
        self._model_ref, self._tok_ref = ray.put(model), ray.put(tokenizer)
        self._state_ref: Any = None
        self._pg = placement_group_for(cfg.rollout_actors, cfg.actor_cpus, cfg.rollout_gpus, cfg.placement_timeout_s)
        device = "cuda" if cfg.rollout_gpus > 0 else "cpu"
        remote = ray.remote(RolloutWorker)

        def make(i: int) -> Any:
            h = remote.options(
                num_cpus=cfg.actor_cpus, num_gpus=cfg.rollout_gpus,
                scheduling_strategy=PlacementGroupSchedulingStrategy(self._pg, placement_group_bundle_index=i),
            ).remote(self._model_ref, self._tok_ref, device, cfg.rollout_threads)
            if self._state_ref is not None:  # a replacement starts from the current weights
                h.load.remote(self._state_ref, self.version)
            return h

        self.slots = ActorSlots(make, cfg.rollout_actors, "rollout", max_restarts=cfg.max_attempts * cfg.rollout_actors)
        self.sync(module, 0)
        self.slots.reset_clock()

    @classmethod
    def factory(cls, config: FleetConfig) -> Any:
        """A trainer `generator_factory`: `(module, tokenizer, device, shared) -> RolloutFleet`."""

        def build(module: Any, tokenizer: Any, device: Any = None, shared: bool = True) -> RolloutFleet:
            return cls(module, tokenizer, config)  # actors always hold their own copy; `device` is theirs

        return build

    def sync(self, module: Any, version: int) -> None:
        """Publish `module`'s weights as `version`: one `ray.put`, every actor loads them."""
        state = {k: v.detach().to("cpu") for k, v in module.state_dict().items()}
        self._state_ref = ray.put(state)
        self.version = int(version)
        loads = [h.load.remote(self._state_ref, self.version) for h in self.slots.handles]
        for i, ref in enumerate(loads):
            handle = self.slots.handles[i]
            try:
                ray.get(ref, timeout=self.config.call_timeout_s)
            except ACTOR_DEATH:
                self.slots.replace(i, handle)  # the fresh actor loads the new weights before anything else

    def generate(self, tasks: Sequence[Task], n: int, sampling: SamplingParams,
                 max_tool_steps: int = 6) -> list[list[Rollout]]:
        """`n` rollouts per task, grouped per task, in task order, each tagged with the synced version."""
        tasks = list(tasks)
        if not tasks:
            return []
        k = min(len(self.slots), len(tasks))
        size = -(-len(tasks) // k)
        shares = [tasks[j:j + size] for j in range(0, len(tasks), size)]
        payloads = [(share, n, dataclasses.replace(sampling, seed=(sampling.seed + 7919 * j) & 0x7FFFFFFF))
                    for j, share in enumerate(shares)]
        cfg = self.config
        results = run_jobs(self.slots, payloads, lambda h, p: h.generate.remote(p[0], p[1], p[2], max_tool_steps),
                           max_in_flight=1, max_attempts=cfg.max_attempts, timeout_s=cfg.call_timeout_s)
        groups = [g for part in results for g in part]
        for i, g in enumerate(groups):
            for r in g:
                r.group_id = i
                if r.policy_version != self.version:
                    raise FleetError(f"rollout fleet: a rollout carries policy version {r.policy_version}, "
                                     f"the fleet was synced to {self.version}")
                self.versions_seen.add(r.policy_version)
        return groups

    def stats(self) -> dict[str, float]:
        """Busy share per rollout actor, the fleet's idle share and its restarts (for MLflow)."""
        return self.slots.shares()

    def close(self) -> None:
        from ray.util.placement_group import remove_placement_group

        self.slots.close()
        if self._pg is not None:
            remove_placement_group(self._pg)
            self._pg = None

