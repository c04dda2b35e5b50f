"""RayResource: off by default (nothing changes), clear errors, and a real materialization on local Ray."""

from __future__ import annotations

import dagster as dg
import pytest

from flywheel.tasks.suites import train_suite
from resources.ray import RayResource


def test_off_by_default_changes_nothing():
    from assets.definitions import defs

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


def test_materializes_on_local_ray_with_a_verifier_fleet_and_dashboard_link(local_sandbox):
    ray = pytest.importorskip("ray", reason="the `ray` extra is not installed")
    tasks = train_suite("code", 2) + train_suite("math", 2)

    @dg.asset
    def judged(ray: RayResource) -> dg.MaterializeResult:
        score = ray.training_kwargs()["score_fn"]
        verdicts = score.many([(t.domain, t.verifier_task(), t.solution) for t in tasks])
        return dg.MaterializeResult(metadata={"passed": sum(v.passed for v in verdicts), **ray.metadata()})

    res = RayResource(mode="local", num_cpus=2, dashboard=True, verifier_actors=1, sandbox_workers=1)
    result = dg.materialize([judged], resources={"ray": res})
    assert result.success
    md = result.asset_materializations_for_node("judged")[0].metadata
    assert md["passed"].value == len(tasks)
    assert md["ray_mode"].value == "local"
    assert md["ray_dashboard"].value.startswith("http://127.0.0.1:")
    assert 0 < md["fleet_verifier_busy.0"].value <= 1 and "idle_verifier_fleet" in md
    assert not ray.is_initialized()  # the resource ended the session it started
