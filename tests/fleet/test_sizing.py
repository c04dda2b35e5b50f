"""The 64-node arithmetic: balanced cores on CPU nodes, the driver's ceiling, GPU nodes, and bad figures."""

from __future__ import annotations

import pytest

from flywheel.fleet.sizing import NodeShape, WorkerFigures, plan_run

FIG = WorkerFigures(verify_per_s=40.0, rollout_tokens_per_s=400.0, tokens_per_rollout=40.0, driver_ms_per_call=2.0,
                    batch_size=16)


def test_cpu_nodes_split_cores_so_both_sides_keep_pace():
    p = plan_run(FIG, nodes=2, node=NodeShape(cpus=9))  # 8 usable cores; 10 rollouts/s per rollout core
    assert p.cores_rollout_per_node == pytest.approx(8 * 40 / (40 + 10))
    assert p.rollout_tokens_per_s_per_node / 40 == pytest.approx(p.verify_per_s_per_node)
    assert p.verify_per_s == pytest.approx(2 * p.verify_per_s_per_node)
    assert p.rollout_tokens_per_s == pytest.approx(p.verify_per_s * 40)
    assert p.bottleneck == "rollout engines"  # sampling takes 6.4 of the 8 cores
    assert "6.4" in p.describe()


def test_sixty_four_nodes_hit_the_single_drivers_ceiling():
    p = plan_run(FIG, nodes=64, node=NodeShape(cpus=32))
    assert p.driver_ceiling_verify_per_s == pytest.approx(16 * 1000 / 2.0)
    assert p.bottleneck == "driver dispatch"
    assert p.verify_per_s == pytest.approx(8000.0)
    bigger = plan_run(WorkerFigures(**{**FIG.__dict__, "batch_size": 256}), nodes=64)
    assert bigger.bottleneck != "driver dispatch" and bigger.verify_per_s > p.verify_per_s


def test_gpu_nodes_and_the_learner():
    node = NodeShape(cpus=17, gpus=8, gpu_tokens_per_s=2000.0)
    p = plan_run(FIG, nodes=1, node=node)
    assert p.cores_rollout_per_node == 0 and p.verify_per_s_per_node == 16 * 40
    assert p.bottleneck == "rollout engines"  # 8 x 2000 / 40 = 400 rollouts/s sampled, 16 x 40 = 640 judgeable
    fast = plan_run(FIG, nodes=1, node=NodeShape(cpus=17, gpus=8, gpu_tokens_per_s=4000.0))
    assert fast.bottleneck == "verifier workers" and fast.verify_per_s == pytest.approx(640.0)  # 800 sampled
    learner = plan_run(WorkerFigures(**{**FIG.__dict__, "learner_tokens_per_s": 4000.0}), nodes=1, node=node)
    assert learner.bottleneck == "learner (one trainer)" and learner.rollout_tokens_per_s == pytest.approx(4000.0)


def test_figures_must_be_positive():
    with pytest.raises(ValueError, match="must be > 0"):
        plan_run(WorkerFigures(0.0, 1.0, 1.0, 1.0))
