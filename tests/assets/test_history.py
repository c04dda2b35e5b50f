"""`flywheel_history` is one point per turn in the Dagster UI's Plots (not a one-dot partition view)."""

from __future__ import annotations

import math

import dagster as dg

from flywheel_dagster.assets.history import flywheel_history


def test_history_is_one_plot_point_per_turn(mlflow_registry, flywheel_home, add_candidate):
    from flywheel_dagster.assets.definitions import build_definitions
    from flywheel_dagster.resources.storage import StorageResource

    assert flywheel_history.partitions_def is None  # the Plots tab charts materializations, not partitions
    instance = dg.DagsterInstance.ephemeral()
    storage = StorageResource(home=str(flywheel_home.home))
    first = dg.materialize([flywheel_history], resources={"storage": storage}, instance=instance)
    meta = first.asset_materializations_for_node("flywheel_history")[0].metadata
    assert meta["turns"].value == 0 and math.isnan(meta["champion_overall_pass@1"].value)

    add_candidate("c1", "2026-12-01", {"math": 0.5, "overall": 0.4}, {"math": 0.6, "overall": 0.5}, True)
    add_candidate("c2", "2026-12-02", {"math": 0.6, "overall": 0.5}, {"math": 0.55, "overall": 0.45}, False)
    # a turn's base-model run (partitioned) materializes it too, unpartitioned
    job = build_definitions().resolve_job_def("base_model_job")  # its storage: $FLYWHEEL_HOME, this home
    instance.add_dynamic_partitions("base_model", ["tiny-v1"])
    run = job.execute_in_process(partition_key="tiny-v1", instance=instance,
                                 asset_selection=[dg.AssetKey("flywheel_history")])
    meta = run.asset_materializations_for_node("flywheel_history")[0].metadata
    assert meta["turns"].value == 2 and meta["promotions"].value == 1
    assert meta["champion_overall_pass@1"].value == 0.5 and meta["champion_pass@1/math"].value == 0.6
    events = instance.fetch_materializations(dg.AssetKey("flywheel_history"), limit=10).records
    assert len(events) == 2 and {e.partition_key for e in events} == {None}
