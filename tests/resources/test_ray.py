"""RayResource: off by default (nothing changes), clear errors, and a real materialization on local Ray."""

from __future__ import annotations

import dagster as dg
import pytest

from flywheel_dagster.resources.ray import RayResource


def test_off_by_default_changes_nothing():
    from flywheel_dagster.assets.definitions import defs

    res = defs.resources["ray"]
    assert isinstance(res, RayResource) and not res.enabled
    assert res.training_kwargs() == {} and res.metadata() == {} and res.dashboard_link() == ""
    tele = object()
    assert res.telemetry(tele) is tele
    assert "ray" in defs.resolve_assets_def("rlvr_policy").required_resource_keys


def test_bad_settings_name_their_field():
    with pytest.raises(dg.Failure, match="field mode: unknown mode 'kuberay'"):
        RayResource(mode="kuberay").training_kwargs()
    with pytest.raises(dg.Failure, match="verifier_actors must be >= 0"):
        RayResource(mode="local", verifier_actors=-1).fleet_config()
    with pytest.raises(dg.Failure, match="field address"):
        RayResource(mode="cluster").connect()


def test_rlvr_policy_materializes_with_both_fleets_on_local_ray(flywheel_home, storage, random_tiny, local_sandbox):
    """The training asset on an embedded Ray: verifier and rollout fleets, the dashboard link, their utilisation
    in the metadata and in the MLflow run beside the trainer's idle shares; the session ends with the step."""
    ray = pytest.importorskip("ray", reason="the `ray` extra is not installed")
    import mlflow

    from flywheel.train.common.telemetry import mlflow_key
    from flywheel_dagster.assets.training import RlvrConfig, rlvr_policy
    from flywheel_dagster.resources.gpu import GpuResource
    from flywheel_dagster.resources.rollout import RolloutEngineResource
    from flywheel_dagster.resources.trainer import TrainerResource

    release = "ray-tiny"
    base = random_tiny(flywheel_home.models / "base" / release)
    fleet = RayResource(mode="local", num_cpus=2, dashboard=True, verifier_actors=1, sandbox_workers=1,
                        rollout_actors=2)
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("base_model", [release])
        instance.report_runless_asset_event(dg.AssetMaterialization(
            "base_model", partition=release, metadata={"path": dg.MetadataValue.path(str(base))}))
        result = dg.materialize(
            [rlvr_policy], partition_key=release, instance=instance,
            run_config=dg.RunConfig({"rlvr_policy": RlvrConfig(
                stage="rl", steps=2, prompts_per_step=2, group_size=3, max_new_tokens=8,
                domain_weights={"math": 1.0}, checkpoint_every=0, dev_every=0)}),
            resources={"gpu": GpuResource(device="cpu"), "trainer": TrainerResource(num_threads=1),
                       "storage": storage, "rollout_engine": RolloutEngineResource(), "ray": fleet})
    assert result.success
    md = result.asset_materializations_for_node("rlvr_policy")[0].metadata
    assert md["steps"].value == 2 and md["ray_mode"].value == "local"
    assert md["ray_dashboard"].value.startswith("http://127.0.0.1:")
    for key in ("fleet_verifier_busy.0", "fleet_rollout_busy.0", "fleet_rollout_busy.1"):
        assert 0 < md[key].value <= 1, key
    assert 0 <= md["idle_verifier_fleet"].value < 1 and 0 <= md["idle_rollout_fleet"].value < 1
    metrics = mlflow.tracking.MlflowClient(flywheel_home.mlflow_uri).get_run(md["mlflow_run_id"].value).data.metrics
    for key in ("idle/update_waiting_for_rollouts", "idle/verifier_fleet", "idle/rollout_fleet",
                "fleet/verifier_busy.0", "final/idle/rollout_fleet"):
        assert mlflow_key(key) in metrics, key
    assert not ray.is_initialized()  # the resource ended the session it started
