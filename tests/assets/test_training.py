"""`rlvr_policy` materializes through Dagster: policy saved HF-loadable, MLflow run linked, check passes."""

from __future__ import annotations

import argparse
import dataclasses

import dagster as dg
import mlflow
import pytest

from assets.evaluation import EvalReportConfig
from assets.training import PLACEMENT, RlvrConfig, rlvr_policy
from flywheel.cli import build_parser
from flywheel.config_fields import from_args
from flywheel.evaluation.suites import EvalConfig
from flywheel.train.config import GRPOConfig
from resources.gpu import GpuResource
from resources.trainer import TrainerResource


def test_config_converts_to_the_library_config():
    cfg = RlvrConfig(steps=3, lr=1e-3, backend="deepspeed").to_lib({"backend": "torch", "zero_stage": 2, "device": "cpu"})
    assert cfg.steps == 3 and cfg.lr == 1e-3 and cfg.backend == "deepspeed" and cfg.zero_stage == 2
    # the defaults are the measured tiny-model recipe
    assert cfg.domain_weights == {"math": 0.9, "code": 0.05, "agent": 0.05}
    assert (cfg.lr_schedule, cfg.advantage, cfg.max_refill_rounds) == ("cosine", "dr_grpo", 1)


def _flags(command: str) -> dict[str, argparse.Action]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return {a.dest: a for a in sub.choices[command]._actions}


@pytest.mark.parametrize(("command", "config", "lib", "left_out"), [
    ("train", RlvrConfig, GRPOConfig, set(PLACEMENT)), ("evaluate", EvalReportConfig, EvalConfig, set())])
def test_cli_and_dagster_config_show_the_same_defaults_and_help(command, config, lib, left_out):
    flags, dagster = _flags(command), config.model_fields
    names = {f.name for f in dataclasses.fields(lib)}
    assert names <= set(flags)  # every library field is a flag
    assert names - {s.name for s in config.lib_specs} == left_out  # and a Dagster field, but where it runs
    for spec in config.lib_specs:
        flag = flags[spec.name]
        help_text = flag.help % {}  # argparse help is a %-template
        assert help_text == spec.help and flag.default == spec.default, spec.name
        prefix = config.spread_fields.get(spec.name)
        if prefix is not None:  # one launchpad field per key, e.g. tasks_math
            assert {k: dagster[prefix + k].default for k in spec.default} == flag.default
            assert all(dagster[prefix + k].description == f"{help_text}: {k}" for k in spec.default)
            continue
        field = dagster[spec.name]
        assert field.description == help_text, spec.name
        assert (tuple(field.default) if spec.kind is tuple else field.default) == flag.default, spec.name
    # and both build the same library config
    assert config().to_lib() == from_args(lib, build_parser().parse_args([command, "x"] if command == "evaluate"
                                                                          else [command]))


def test_train_flags_build_the_library_config():
    args = build_parser().parse_args(["train", "--domain-weights", "math=1,code=0.5", "--no-dynamic-sampling",
                                      "--adam-betas", "0.9", "0.95", "--steps", "7"])
    cfg = from_args(GRPOConfig, args)
    assert cfg.domain_weights == {"math": 1.0, "code": 0.5} and cfg.adam_betas == (0.9, 0.95)
    assert cfg.steps == 7 and not cfg.dynamic_sampling and cfg.lr == GRPOConfig().lr


def test_rlvr_policy_materializes(flywheel_home, storage):
    from test_trainer import tiny_policy

    release = "test-tiny"
    base = tiny_policy(flywheel_home.models / "base" / release)
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("base_model", [release])
    # what base_model and task_pool record upstream: the checkpoint folder, the pool's log partitions
    instance.report_runless_asset_event(dg.AssetMaterialization(
        "base_model", partition=release, metadata={"path": dg.MetadataValue.path(str(base))}))
    instance.report_runless_asset_event(dg.AssetMaterialization(
        "task_pool", metadata={"log_partitions": dg.MetadataValue.json(["2026-12-01"])}))
    run_config = dg.RunConfig({"rlvr_policy": RlvrConfig(
        steps=2, prompts_per_step=2, group_size=3, max_new_tokens=8, domain_weights={"math": 1.0}, checkpoint_every=1)})
    result = dg.materialize(
        [rlvr_policy], partition_key=release, instance=instance, run_config=run_config,
        resources={"gpu": GpuResource(device="cpu"), "trainer": TrainerResource(num_threads=1), "storage": storage},
    )
    assert result.success
    mat = result.asset_materializations_for_node("rlvr_policy")[0]
    md = mat.metadata
    policy = flywheel_home.models / "policies" / release
    assert md["policy_path"].value == str(policy) and (policy / "config.json").exists()
    assert md["steps"].value == 2
    assert md["log_partitions"].value == ["2026-12-01"]  # passed on to deployed_model's registered version
    assert "data:image/png;base64," in md["reward_curve"].value
    run = mlflow.tracking.MlflowClient(flywheel_home.mlflow_uri).get_run(md["mlflow_run_id"].value)
    assert run.info.status == "FINISHED" and run.data.params["manifest.data.base_model"] == release
    checks = result.get_asset_check_evaluations()
    assert [(c.check_name, c.passed) for c in checks] == [("rlvr_run_sound", True)]
