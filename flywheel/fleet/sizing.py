"""How big a Ray run gets: verifications/s and rollout tokens/s per node and for the cluster, from measured
per-worker figures, with the bottleneck named. `benchmarks/bench_fleet.py` measures the figures on this
machine and prints `plan_run(figures, nodes=64)`; docs/ray.md walks through the arithmetic.

The model (one training step's data plane, steady state):
- a rollout worker (one CPU core, or one GPU replica) samples `rollout_tokens_per_s`;
- a verifier worker (one core with its sandbox slot) judges `verify_per_s`;
- each rollout needs one verification and samples `tokens_per_rollout` tokens;
- one driver (the training step's process) dispatches every verification call; each costs it
  `driver_ms_per_call` and carries `batch_size` verifications: a ceiling no node count lifts;
- one learner (the trainer) consumes `learner_tokens_per_s` (0: not measured, left out).
On CPU-only nodes the cores are split between rollouts and verifiers so both sides keep pace
(`cores_rollout = cores * v / (v + g / T)`); on GPU nodes rollouts use the GPUs and the cores verify.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class WorkerFigures:
    """Measured per-worker throughput (`bench_fleet.py` prints them)."""

    verify_per_s: float  # verifications/s of one verifier worker (one core)
    rollout_tokens_per_s: float  # sampled tokens/s of one rollout worker (one CPU core / one GPU replica)
    tokens_per_rollout: float  # tokens one rollout samples (= tokens per verification)
    driver_ms_per_call: float  # driver time per Ray verification call (submit, wait, result)
    batch_size: int = 16  # verifications per call
    learner_tokens_per_s: float = 0.0  # tokens/s the trainer's update consumes (0: not measured)


@dataclass(frozen=True)
class NodeShape:
    """One node of the cluster: cores (one kept for Ray's own daemons) and GPUs with their sampling rate."""

    cpus: int = 32
    gpus: int = 0
    gpu_tokens_per_s: float = 0.0  # rollout tokens/s of one GPU replica (vLLM); used when gpus > 0
    reserved_cpus: int = 1  # raylet, object store, log monitor


@dataclass(frozen=True)
class RunPlan:
    """What `nodes` such nodes sustain, per node and in total, and what limits it."""

    nodes: int
    cores_rollout_per_node: float
    cores_verify_per_node: float
    rollout_tokens_per_s_per_node: float
    verify_per_s_per_node: float
    rollout_tokens_per_s: float  # cluster, after every ceiling
    verify_per_s: float  # cluster, after every ceiling
    driver_ceiling_verify_per_s: float
    bottleneck: str
    why: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        return (f"{self.nodes} nodes: {self.cores_rollout_per_node:.1f} cores rollouts + "
                f"{self.cores_verify_per_node:.1f} cores verifying per node -> "
                f"{self.rollout_tokens_per_s_per_node:,.0f} rollout tok/s and {self.verify_per_s_per_node:,.0f} "
                f"verif/s per node; cluster {self.rollout_tokens_per_s:,.0f} tok/s, {self.verify_per_s:,.0f} "
                f"verif/s. Bottleneck: {self.bottleneck} ({self.why})")


def plan_run(fig: WorkerFigures, nodes: int = 64, node: NodeShape | None = None) -> RunPlan:
    """The steady-state throughput of `nodes` nodes of shape `node` (default: 32 CPU cores, no GPU)."""
    node = node or NodeShape()
    if min(fig.verify_per_s, fig.tokens_per_rollout, fig.driver_ms_per_call, fig.batch_size) <= 0:
        raise ValueError(f"plan_run: every figure must be > 0, got {fig}")
    cores = float(node.cpus - node.reserved_cpus)
    v, t = fig.verify_per_s, fig.tokens_per_rollout
    if node.gpus > 0:
        x = 0.0
        tok_node = node.gpus * node.gpu_tokens_per_s
        ver_node = cores * v
    else:
        g = fig.rollout_tokens_per_s
        if g <= 0:
            raise ValueError("plan_run: CPU-only nodes need rollout_tokens_per_s > 0")
        x = cores * v / (v + g / t)  # rollouts/s (x * g / t) == verifications/s ((cores - x) * v)
        tok_node, ver_node = x * g, (cores - x) * v
    driver_cap = fig.batch_size * 1000.0 / fig.driver_ms_per_call
    # the cluster's rate: rollouts need one verification each; every ceiling applies
    rollouts = min(nodes * tok_node / t, nodes * ver_node, driver_cap)
    limits = {
        "rollout engines": nodes * tok_node / t,
        "verifier workers": nodes * ver_node,
        "driver dispatch": driver_cap,
    }
    if fig.learner_tokens_per_s > 0:
        limits["learner (one trainer)"] = fig.learner_tokens_per_s / t
        rollouts = min(rollouts, limits["learner (one trainer)"])
    name = min(limits, key=limits.__getitem__)
    if node.gpus == 0 and name in ("rollout engines", "verifier workers") and \
            abs(limits["rollout engines"] - limits["verifier workers"]) < 1e-6 * max(rollouts, 1.0):
        name = "rollout engines" if x >= cores - x else "verifier workers"
        why = (f"cores split {x:.1f}:{cores - x:.1f} to keep pace; the larger share goes to "
               f"{'sampling' if name == 'rollout engines' else 'judging'}, so that is what to speed up first")
    else:
        why = f"{limits[name]:,.0f} verif/s there; the others allow " + ", ".join(
            f"{k} {val:,.0f}" for k, val in limits.items() if k != name)
    return RunPlan(nodes, x, cores - x, tok_node, ver_node, rollouts * t, rollouts, driver_cap, name, why)
