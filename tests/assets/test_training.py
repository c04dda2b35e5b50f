"""`rlvr_policy`: its config converts to the library's; it materializes through Dagster (policy saved HF-loadable,
MLflow run linked by its UI URL, check passes)."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import mlflow
import yaml

from flywheel_dagster.assets.training import RlvrConfig, rlvr_policy
from flywheel_dagster.resources.gpu import GpuResource
from flywheel_dagster.resources.ray import RayResource
from flywheel_dagster.resources.rollout import RolloutEngineResource
from flywheel_dagster.resources.trainer import TrainerResource


def test_config_converts_to_the_library_config():
    cfg = RlvrConfig(steps=3, lr=1e-3, backend="deepspeed").to_lib({"backend": "torch", "zero_stage": 2, "device": "cpu"})
    assert cfg.steps == 3 and cfg.lr == 1e-3 and cfg.backend == "deepspeed" and cfg.zero_stage == 2
    # the defaults are the measured tiny-model recipe
    assert cfg.domain_weights == {"math": 0.8, "code": 0.1, "agent": 0.1}
    assert (cfg.lr_schedule, cfg.advantage, cfg.max_refill_rounds) == ("cosine", "dr_grpo", 1)


def test_rlvr_policy_materializes(flywheel_home, storage, random_tiny):
    release = "test-tiny"
    base = random_tiny(flywheel_home.models / "base" / release)
    # the project's dagster.yaml hands the `flywheel.progress` logger to Dagster: progress lines join the event log
    python_logs = yaml.safe_load((Path(__file__).parents[2] / "dagster.yaml").read_text())["python_logs"]
    with dg.instance_for_test(overrides={"python_logs": python_logs}) as instance:
        _materialize_and_check(instance, release, base, flywheel_home, storage)


def _materialize_and_check(instance, release, base, flywheel_home, storage):
    instance.add_dynamic_partitions("base_model", [release])
    # what base_model and task_pool record upstream: the checkpoint folder, the pool's log partitions
    instance.report_runless_asset_event(dg.AssetMaterialization(
        "base_model", partition=release, metadata={"path": dg.MetadataValue.path(str(base))}))
    instance.report_runless_asset_event(dg.AssetMaterialization(
        "task_pool", metadata={"log_partitions": dg.MetadataValue.json(["2026-12-01"])}))
    run_config = dg.RunConfig({"rlvr_policy": RlvrConfig(
        stage="rl", steps=2, prompts_per_step=2, group_size=3, max_new_tokens=8, domain_weights={"math": 1.0}, checkpoint_every=1)})
    result = dg.materialize(
        [rlvr_policy], partition_key=release, instance=instance, run_config=run_config,
        resources={"gpu": GpuResource(device="cpu"), "trainer": TrainerResource(num_threads=1), "storage": storage,
                   "rollout_engine": RolloutEngineResource(), "ray": RayResource()},
    )
    assert result.success
    mat = result.asset_materializations_for_node("rlvr_policy")[0]
    md = mat.metadata
    policy = flywheel_home.models / "policies" / release
    assert md["policy_path"].value == f"models/policies/{release}" and (policy / "config.json").exists()
    assert md["steps"].value == 2
    assert md["log_partitions"].value == ["2026-12-01"]  # passed on to deployed_model's registered version
    assert "data:image/png;base64," in md["reward_curve"].value
    client = mlflow.tracking.MlflowClient(flywheel_home.mlflow_uri)
    run = client.get_run(md["mlflow_run_id"].value)
    assert run.info.status == "FINISHED" and run.data.params["manifest.data.base_model"] == release
    # the metadata links the run's page in the MLflow UI (`make mlflow`), not the store's URI
    assert isinstance(md["mlflow_run"], dg.UrlMetadataValue)
    assert md["mlflow_run"].value == \
        f"http://127.0.0.1:5000/#/experiments/{run.info.experiment_id}/runs/{run.info.run_id}"
    # reward and pass rate chart first; no KL without a reference policy (kl_coef 0); a described experiment
    assert {"1_reward/mean", "2_pass_rate/mean"} <= set(run.data.metrics) and "kl" not in run.data.metrics
    assert "Training runs" in client.get_experiment(run.info.experiment_id).tags["mlflow.note.content"]
    checks = result.get_asset_check_evaluations()
    assert [(c.check_name, c.passed) for c in checks] == [("rlvr_run_sound", True)]
    # the step's event log carries the training's progress line (what the UI shows while it runs)
    lines = [e.user_message for e in instance.all_logs(result.run_id) if "RLVR steps" in (e.user_message or "")]
    assert any("RLVR steps: 2/2 steps (100%)" in ln and "elapsed" in ln for ln in lines), lines


def test_rebase_samples_with_the_champion_and_restarts_the_fine_tuning_from_the_base(
        flywheel_home, storage, random_tiny, mlflow_registry, tmp_path):
    """`init_from=rebase` through Dagster: the champion of the same base model samples, the policy's fine-tuning
    starts from the base, and the champion's dataset is carried into the new one."""
    import json

    release = "test-tiny"
    base = random_tiny(flywheel_home.models / "base" / release)
    champ = random_tiny(tmp_path / "champion")
    carried = [{"task_id": f"c{i}", "domain": "math", "prompt": f"What is {i}+1?", "response": f"Answer: {i + 1}",
                "source": "policy"} for i in range(3)]
    (champ / "rft_dataset.jsonl").write_text("".join(json.dumps(c) + "\n" for c in carried))
    mlflow_registry.set_champion(mlflow_registry.register(champ, {"base_model": release}).version)
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("base_model", [release])
        instance.report_runless_asset_event(dg.AssetMaterialization(
            "base_model", partition=release, metadata={"path": dg.MetadataValue.path(str(base))}))
        run_config = dg.RunConfig({"rlvr_policy": RlvrConfig(
            stage="rft", init_from="rebase", rft_tasks_per_domain={"math": 2}, rft_samples_per_task=1,
            rft_pool_samples_per_task=1, rft_variants_per_task=0, rft_max_new_tokens=4, rft_steps=1,
            rft_batch_size=2, rft_warmup=0)})
        result = dg.materialize(
            [rlvr_policy], partition_key=release, instance=instance, run_config=run_config,
            resources={"gpu": GpuResource(device="cpu"), "trainer": TrainerResource(num_threads=1), "storage": storage,
                       "rollout_engine": RolloutEngineResource(), "ray": RayResource()})
    assert result.success
    md = result.asset_materializations_for_node("rlvr_policy")[0].metadata
    assert "(the champion) samples; the fine-tuning restarts from base model test-tiny" in md["trained_from"].value
    policy = flywheel_home.models / "policies" / release
    info = json.loads((policy / "flywheel_rft.json").read_text())
    assert Path(info["base_model"]) == Path(base) and Path(info["sampled_with"]) == Path(mlflow_registry.champion().model_path)
    saved = [json.loads(x) for x in (policy / "rft_dataset.jsonl").read_text().splitlines()]
    assert all(c in saved for c in carried)
