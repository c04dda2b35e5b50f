"""`deployed_model` -> `canary` under dagster.materialize(): a candidate that passes the offline gate becomes the
challenger, shadows the champion on the day's live requests through the rollout engine, and is promoted only if
it holds there; and a whole `flywheel turn` whose deliberately bad candidate passes the offline gate, loses its
canary and is not promoted."""

from __future__ import annotations

import json
import shutil

import dagster as dg
import pytest

from flywheel_dagster.assets.partitions import base_models

DAY = "2026-12-02"


def _forged_eval(paths, base_model: str) -> None:
    """An evaluation the candidate wins outright (every held-out math task vs half): it passes the gate."""
    from flywheel.evaluation.report import write_report
    from flywheel.evaluation.runner import EvalReport, TaskResult, aggregate, compare
    from flywheel.evaluation.suites import EvalConfig
    from flywheel.registry.candidate import eval_dir

    cfg = EvalConfig(n_samples=2, n_boot=200)

    def report(model, samples):
        tasks = [TaskResult(f"math-{i}", "math", samples, 1.0, 10, 5, 1.0, 0.0) for i in range(60)]
        return EvalReport(model, cfg, tasks, aggregate(tasks, cfg))

    cand, champ = report("candidate", (True, True)), report("flywheel-policy:1", (True, False))
    out = eval_dir(paths, base_model)
    write_report(out, cand, champ, compare(cand, champ))
    (out / "meta.json").write_text(json.dumps({"champion_uri": "flywheel-policy:1"}))


def test_the_gate_makes_a_challenger_and_its_canary_on_live_requests_promotes_it(
        flywheel_home, storage, seed_mlflow_db, tiny_model_dir, random_tiny):
    import torch

    from flywheel.registry.mlflow_registry import Registry
    from flywheel_dagster.assets.canary import canary
    from flywheel_dagster.assets.deployment import deployed_model
    from flywheel_dagster.resources.gpu import GpuResource
    from flywheel_dagster.resources.rollout import RolloutEngineResource

    torch.set_num_threads(1)
    seed_mlflow_db(flywheel_home)
    champion = shutil.copytree(tiny_model_dir, flywheel_home.models / "base" / "tiny-test")
    reg = Registry(flywheel_home.mlflow_uri)
    reg.ensure_champion(champion, "tiny-test")  # the trained tiny model serves production
    bad = random_tiny(flywheel_home.models / "policies" / "tiny-test")  # untrained weights
    _forged_eval(flywheel_home, "tiny-test")
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(base_models.name, ["tiny-test"])
    for asset, part, md in (("rlvr_policy", "tiny-test", {"policy_path": dg.MetadataValue.path(str(bad))}),
                            ("production_traffic", DAY, {"written": True, "records": 200,
                                                         "served_by": "flywheel-policy:1"})):
        instance.report_runless_asset_event(dg.AssetMaterialization(asset, partition=part, metadata=md))
    resources = {"gpu": GpuResource(device="cpu"), "storage": storage, "rollout_engine": RolloutEngineResource()}
    run_config = {"ops": {"canary": {"config": {"min_pairs": 60, "share": 0.1, "serve_max_new_tokens": 32,
                                                "serve_max_steps": 2}}}}
    res = dg.materialize([deployed_model, canary], partition_key="tiny-test", instance=instance,
                         resources=resources, run_config=run_config, tags={"flywheel/log_partition": DAY})
    assert res.success
    mats = {m.asset_key.to_user_string(): m.materialization.metadata for m in res.get_asset_materialization_events()}
    dep, can = mats["deployed_model"], mats["canary"]
    assert dep["promoted"].value is False and dep["challenger"].value == "flywheel-policy:2"  # phase 1: gate passed
    assert dep["champion"].value == "flywheel-policy:1" and "passed the offline gate" in dep["reason"].value
    verdict = can["canary"].value
    assert can["decided"].value is True and can["requests"].value == 60 and verdict["n"] == 60
    assert verdict["passed"] and verdict["lo"] <= verdict["diff"] <= verdict["hi"]  # not shown worse
    assert can["promoted"].value is True and "not shown worse" in can["reason"].value
    assert can["champion"].value == "flywheel-policy:2" == reg.champion().uri and reg.challenger() is None
    overall = [r for r in can["eval_vs_live"].value if r["domain"] == "overall"][0]
    assert overall["eval_diff"] == 0.5 and overall["live_pairs"] == 60 and overall["live_diff"] is not None
    assert "| overall |" in can["eval_vs_live_table"].value
    pairs = (flywheel_home.home / "canary" / DAY / "flywheel-policy-2.jsonl").read_text().splitlines()
    assert len(pairs) == 60 and not (flywheel_home.raw_logs / DAY).exists()  # the canary never writes the day's logs
    assert reg.get("2").tags["flywheel.promoted"] == "true"
    from flywheel_dagster.assets.canary import served_records

    instance.report_runless_asset_event(dg.AssetMaterialization(  # a re-run of the day finds its logs there
        "production_traffic", partition=DAY, metadata={"written": False, "records": 0}))
    assert served_records(instance, DAY) == 200 and served_records(instance, "2026-12-09") == 0
    again = dg.materialize([canary], partition_key="tiny-test", instance=instance, resources=resources,
                           tags={"flywheel/log_partition": DAY})
    meta = next(iter(again.get_asset_materialization_events())).materialization.metadata
    assert meta["decided"].value is False and "no challenger" in meta["reason"].value


def test_the_turn_summary_prints_eval_beside_live():
    from flywheel.monitoring.canary import Pair, canary_verdict, eval_vs_live
    from flywheel_dagster.assets.turn_command import format_summary

    verdict = canary_verdict([Pair(f"t{i}", "math", True, i % 3 == 0) for i in range(300)])
    rows = eval_vs_live({"math": 0.5, "overall": 0.5}, {"math": 0.7, "overall": 0.7}, verdict)
    text = format_summary({"day": DAY, "base_model": "tiny-test", "traffic_served_by": "flywheel-policy:1",
                           "eval_before": {"math": 0.5, "overall": 0.5}, "eval_after": {"math": 0.7, "overall": 0.7},
                           "promoted": False, "reason": f"kept flywheel-policy:1: {verdict.reason}",
                           "gate": {"passed": True, "reason": "challenger flywheel-policy:2: passed the offline gate"},
                           "canary": verdict.to_dict(), "eval_vs_live": rows})
    assert "offline gate: challenger flywheel-policy:2" in text and "eval (held-out) vs live" in text
    assert "| math | 0.500 | 0.700 | +0.200 | 1.000 | 0.333 | -0.667 [" in text
    assert "promoted: no — kept flywheel-policy:1: canary:" in text


TINY_TURN = {
    "verifiers": {"max_tasks": 24},
    # the candidate is trained from the (bad) base model, not from the champion
    "rlvr_policy": {"stage": "rl", "steps": 2, "prompts_per_step": 4, "group_size": 4, "max_new_tokens": 24,
                    "checkpoint_every": 0, "init_from": "base"},
    # no math in the offline evaluation: which of 4 math tasks the champion passes depends on the CPU's float
    # kernels (2 of 4 on an AMD EPYC, against the candidate's 0, put the gate's lower bound at -1.000, which
    # even the loosest gate fails); on code and agent both models are at ~0, so the candidate passes the
    # gate and meets the champion's math live, where 1,000 requests decide
    "eval_report": {"n_samples": 1, "tasks_math": 0, "tasks_code": 2, "tasks_agent": 2, "max_new_tokens": 48,
                    "max_steps": 3},
    # a gate that lets any candidate through, so the turn reaches its canary
    "deployed_model": {"margin": -1.0, "non_inferiority": 1.0, "non_inferiority_max": 1.0},
    # the champion passes ~4% of live requests (a tenth of the math), the bad candidate ~0.6% (digits by chance)
    "canary": {"min_pairs": 1000, "serve_max_new_tokens": 64, "serve_max_steps": 2},
}


@pytest.fixture(scope="module")
def math_champion(tmp_path_factory):
    """A tiny model that does some of production's math (~10% of it at T 0.7; tiny-quick is at chance there):
    the QUICK pipeline, math only, 1,000 SFT steps at tiny-v1's shape (~40 s on 2 cores)."""
    from dataclasses import replace

    import torch

    from flywheel.models.build import build_tiny_model
    from flywheel.models.recipe import QUICK

    torch.set_num_threads(1)
    recipe = replace(QUICK, release="tiny-math-test", hidden_size=96, n_layers=3, n_heads=3, intermediate_size=192,
                     n_math=2000, n_code=0, n_agent=0, math_noise=0.0, sft=replace(QUICK.sft, steps=1000), eval_n=0)
    return build_tiny_model(tmp_path_factory.mktemp("math-champion"), recipe).path


@pytest.mark.slow
def test_a_turn_whose_candidate_passes_the_offline_gate_but_loses_its_canary_keeps_the_champion(
        flywheel_home, turn_instance, seed_mlflow_db, math_champion, random_tiny, capsys):
    """`flywheel turn --json` end to end (~1 min): a deliberately bad candidate (trained from a new base model
    release that is untrained, while the champion does some math) passes a gate that lets anything
    through, becomes the challenger, shadows the champion on 1,000 further requests of the day through the
    rollout engine, is shown to lose there and is not promoted; the decision, eval beside live and the history
    say so."""
    from flywheel.cli import main
    from flywheel.registry.mlflow_registry import Registry

    seed_mlflow_db(flywheel_home)
    random_tiny(flywheel_home.base_models / "tiny-next")  # the new base release is bad: untrained weights
    trained = shutil.copytree(math_champion, flywheel_home.models / "policies" / "served")
    Registry(flywheel_home.mlflow_uri).ensure_champion(trained, "tiny-quick")  # what production serves today
    sets = [x for asset, fields in TINY_TURN.items() for k, v in fields.items()
            for x in ("--set", f"{asset}.{k}={json.dumps(v)}")]
    code = main(["turn", "--day", "2026-12-01", "--base-model", "tiny-next", "--records", "300",
                 "--train-budget-s", "0", "--json", *sets])
    out = json.loads(capsys.readouterr().out)
    assert code == 0, out
    assert out["gate"]["passed"] and "passed the offline gate" in out["gate"]["reason"]
    canary_said = out["canary"]
    print("canary:", canary_said["reason"])
    assert canary_said["n"] == 1000 and not canary_said["passed"], canary_said
    assert canary_said["champion_rate"] > canary_said["candidate_rate"] and canary_said["hi"] < 0
    assert out["promoted"] is False and out["reason"].startswith("kept") and "loses on live traffic" in out["reason"]
    overall = out["eval_vs_live"][-1]
    assert overall["domain"] == "overall" and overall["live_pairs"] == 1000 and overall["live_diff"] < 0
    reg = Registry(flywheel_home.mlflow_uri)
    assert reg.challenger() is None and out["champion_after"] == reg.champion().uri == "flywheel-policy:1"
    assert out["history"][-1]["canary"].startswith("failed")
