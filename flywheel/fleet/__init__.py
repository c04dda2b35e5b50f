"""flywheel.fleet: the RL loop's data plane on Ray (verifier and rollout actors).

Dagster places steps; inside the training step these fleets spread the work over a Ray cluster:

    scorer = FleetScorer(FleetConfig(verifier_actors=2))          # a `ScoreFn` with `.many(items)`
    factory = RolloutFleet.factory(FleetConfig(rollout_actors=2))  # a trainer `generator_factory`
    train_rlvr(cfg, inputs, score_fn=scorer, generator_factory=factory)

Ray must be connected first (`ray.init(...)`, or the `ray` Dagster resource). Without a fleet the
trainer scores and samples in process, as before. Importing this package does not import Ray;
the modules that define actors do (`verifier_fleet`, `rollout_fleet`, `actors`).
"""

from flywheel.fleet.config import FleetConfig, FleetError

__all__ = ["FleetConfig", "FleetError"]
