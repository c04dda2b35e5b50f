"""The rollout fleet on local Ray: a GRPO run with 2 rollout actors, every rollout's version within the bound."""

from __future__ import annotations

import math

import pytest

from flywheel.fleet.config import FleetConfig
from flywheel.tasks.suites import train_suite
from flywheel.train.common.telemetry import Telemetry
from flywheel.train.config import GRPOConfig
from flywheel.train.grpo.trainer import RunInputs, train_rlvr
from flywheel.verifiers.verdict import Verdict

CFG = GRPOConfig(steps=3, prompts_per_step=4, group_size=4, micro_batch_size=8, max_new_tokens=12, lr=1e-2,
                 domain_weights={"math": 0.8, "agent": 0.2}, max_tool_steps=2, num_threads=1,
                 off_policy_pipeline=True, max_staleness=1)


def _digits(domain: str, task: dict, response: str) -> Verdict:
    """A reward a random policy earns sometimes: digits written (capped at 3)."""
    n = sum(c.isdigit() for c in response)
    return Verdict(min(n, 3) / 3, n >= 3, f"{n} digits")


class Recorder:
    """The fleet as the trainer sees it, noting the version it was synced to and what each rollout carries."""

    def __init__(self, fleet) -> None:
        self.fleet, self.engine, self.calls = fleet, fleet.engine, []

    @property
    def version(self) -> int:
        return self.fleet.version

    def sync(self, module, version: int) -> None:
        self.fleet.sync(module, version)

    def generate(self, tasks, n, sampling, max_tool_steps=6):
        groups = self.fleet.generate(tasks, n, sampling, max_tool_steps)
        self.calls.append((self.fleet.version, [r.policy_version for g in groups for r in g], len(groups)))
        return groups

    def close(self) -> None:
        self.stats = self.fleet.stats()
        self.fleet.close()


@pytest.fixture(scope="module")
def policy(random_tiny, tmp_path_factory):
    return random_tiny(tmp_path_factory.mktemp("fleet_policy"))


def test_grpo_with_two_rollout_actors_keeps_versions_within_the_bound(ray_session, flywheel_home, policy):
    from flywheel.fleet.rollout_fleet import RolloutFleet

    build = RolloutFleet.factory(FleetConfig(rollout_actors=2))
    made: list[Recorder] = []

    def factory(module, tokenizer, device, shared=True):
        made.append(Recorder(build(module, tokenizer, device, shared)))
        return made[-1]

    steps: list[tuple[int, float]] = []
    tasks = train_suite("math", 20) + train_suite("agent", 4)
    res = train_rlvr(CFG, RunInputs(policy, tasks, flywheel_home, "fleet"), score_fn=_digits,
                     telemetry=Telemetry(None, enabled=False), generator_factory=factory,
                     on_step=lambda s, m: steps.append((s, m["staleness"])))
    assert res.finished and res.steps_done == CFG.steps
    assert all(math.isfinite(h["reward/mean"]) for h in res.history)
    [rec] = made
    assert rec.calls and all(n == len(versions) // CFG.group_size for _, versions, n in rec.calls)
    # each call's rollouts carry exactly the version the fleet was synced to ...
    assert all(set(versions) == {synced} for synced, versions, _ in rec.calls)
    # ... and the step that trained on them is within max_staleness of it
    made_with = {step - st for step, st in steps}
    assert all(0 <= st <= CFG.max_staleness for _, st in steps)
    assert {v for _, versions, _ in rec.calls for v in versions} <= made_with
    assert max(made_with) >= 1  # the actors really received updated weights
    assert rec.stats["fleet/rollout_busy.0"] > 0 and rec.stats["fleet/rollout_busy.1"] > 0
    assert not ray_session.util.placement_group_table() or all(
        pg["state"] == "REMOVED" for pg in ray_session.util.placement_group_table().values())
