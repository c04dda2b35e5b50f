"""What a fleet is made of: actor counts, their sizes, the in-flight bound and the retry budget.

One frozen dataclass (fields with `help`): the `ray` Dagster resource's fields take their defaults
and descriptions from it, so a default is declared once.
"""

from __future__ import annotations

from dataclasses import dataclass

from flywheel.config_fields import check_choices, option


class FleetError(RuntimeError):
    """The fleet itself failed (actors keep dying, nothing answers, no room to place them): infrastructure."""


@dataclass(frozen=True)
class FleetConfig:
    """Sizes of the verifier and rollout fleets (0 actors: that part stays in process)."""

    verifier_actors: int = option(2, "Verifier actors, each holding a warm sandbox pool (0: verify in process).")
    sandbox_workers: int = option(2, "Sandbox executions in flight inside one verifier actor.")
    sandbox_backend: str = option("local", "Sandbox backend inside verifier actors: local | docker.",
                                  choices=("local", "docker"))
    rollout_actors: int = option(0, "Rollout engine replicas (0: training rollouts sample in process).")
    rollout_threads: int = option(1, "torch CPU threads per rollout actor.")
    rollout_gpus: float = option(0.0, "GPUs per rollout actor (0: sample on CPU; >0: CUDA in the actor).")
    batch_size: int = option(16, "Verifications per Ray call: amortises the per-call overhead (~1 ms).")
    max_in_flight: int = option(2, "Ray calls queued per actor at once: the backpressure bound.")
    actor_cpus: float = option(0.5, "CPUs Ray reserves per actor (fractional, so a 2-CPU node fits a fleet).")
    max_attempts: int = option(3, "Tries of one piece of work across actor deaths/infra errors before failing.")
    call_timeout_s: float = option(600.0, "Longest wait for any answer from the fleet before it is declared stuck.")
    placement_timeout_s: float = option(60.0, "Longest wait for the rollout actors' placement group to be placed.")

    def __post_init__(self) -> None:
        check_choices(self)
        for name in ("verifier_actors", "rollout_actors"):
            if getattr(self, name) < 0:
                raise ValueError(f"FleetConfig.{name} must be >= 0, got {getattr(self, name)}")
        for name in ("sandbox_workers", "rollout_threads", "batch_size", "max_in_flight", "max_attempts"):
            if getattr(self, name) < 1:
                raise ValueError(f"FleetConfig.{name} must be >= 1, got {getattr(self, name)}")
        if self.actor_cpus <= 0 or self.rollout_gpus < 0:
            raise ValueError(f"FleetConfig: actor_cpus must be > 0 and rollout_gpus >= 0, got "
                             f"{self.actor_cpus} and {self.rollout_gpus}")
