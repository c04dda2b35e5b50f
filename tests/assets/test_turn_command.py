"""`flywheel turn`: every `--set` override is checked against both jobs' config before anything is written,
and without `$DAGSTER_HOME` the turn uses the persistent instance in `$FLYWHEEL_HOME/dagster`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flywheel.cli import main

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("override, why", [
    ("rlvr_policy.stepz=5", "--set rlvr_policy.stepz: rlvr_policy has no config field 'stepz'; its fields: "),
    ("rlvr_polcy.steps=5", "--set rlvr_polcy.…: no asset 'rlvr_polcy' with config in a turn; assets with config: "),
    ("task_logs.x=1", "no asset 'task_logs' with config in a turn"),  # in a job, but takes no config
    ("rlvr_policy.steps=abc", "--set rlvr_policy.steps: expected Int, got 'abc'"),
    ("eval_report.n_samples=2.5", "--set eval_report.n_samples: expected Int, got 2.5"),
    ("rlvr_policy.domain_weights={\"math\": \"x\"}", "rlvr_policy.domain_weights: expected mapping of String to Float"),
    ("verifiers.max_tasks=true", "--set verifiers.max_tasks: expected Int, got True"),
    ("rlvr_policy.adam_betas=[0.9, 0.99, 0.5]", "--set rlvr_policy.adam_betas: adam_betas: expected 2 values, got 3: [0.9, 0.99, 0.5]"),
    ("rollout_engine.engin=vllm", "--set rollout_engine.engin: resource 'rollout_engine' has no field 'engin'; "
                                  "its fields: device, dtype, "),  # a resource's fields are overridable too
    ("rollout_engine.max_batch_size=x", "--set rollout_engine.max_batch_size: expected Int, got 'x'"),
    # values, not only names and types: choices, ranges and finiteness, as the library dataclass checks them
    ('rlvr_policy.stage="grpo"', "--set rlvr_policy.stage: unknown stage 'grpo'; valid: "),
    ("rlvr_policy.lr=NaN", "--set rlvr_policy.lr: lr: Input should be a finite number, got nan"),
    ("rlvr_policy.steps=-5", "--set rlvr_policy.steps: steps: Input should be greater than or equal to 0, got -5"),
    ("rlvr_policy.replay_share=NaN", "--set rlvr_policy.replay_share: replay_share: Input should be a finite number"),
    ("sandbox.workers=-3", "--set sandbox.workers: workers: Input should be greater than or equal to 1, got -3"),
    ("rollout_engine.gpu_memory_utilization=1.5", "gpu_memory_utilization: Input should be less than or equal to 1"),
    # and whether the chosen stage reads it at all (issue 27: turn --help's own example did nothing under RFT)
    ("rlvr_policy.steps=20", "--set rlvr_policy.steps: a GRPO setting, which stage rft (the default) never reads; "
                             "RFT's own is rlvr_policy.rft_steps; GRPO runs with rlvr_policy.stage=rl or rft_rl"),
    ("rlvr_policy.clip_high=0.3", "--set rlvr_policy.clip_high: a GRPO setting, which stage rft (the default) never "
                                  "reads; GRPO runs with rlvr_policy.stage=rl or rft_rl"),
])
def test_bad_overrides_fail_before_anything_is_written(override, why, flywheel_home, capsys, monkeypatch):
    monkeypatch.setenv("DAGSTER_HOME", str(flywheel_home.home / "dagster_home"))
    code = main(["turn", "--day", "2026-12-01", "--set", "rlvr_policy.rft_steps=3",
                 "--set", override])
    err = capsys.readouterr().err
    assert code == 2 and why in err and len(err.strip().splitlines()) == 1
    assert not list(flywheel_home.raw_logs.glob("*"))  # no day of production traffic written
    assert not (flywheel_home.home / "dagster_home").exists()  # no Dagster run started
    if "config field" in why:
        assert ", steps, " in err  # the asset's valid fields are listed
    if "assets with config: " in why:
        assert "verifiers, base_model, rlvr_policy, eval_report" in err  # ... or the assets that take config


def test_bad_override_under_json(flywheel_home, capsys):
    assert main(["turn", "--set", "rlvr_policy.stepz=5", "--json"]) == 2
    err = json.loads(capsys.readouterr().out)
    assert err["exit_code"] == 2 and err["error"].startswith("--set rlvr_policy.stepz: rlvr_policy has no config")


def test_valid_overrides_pass_the_check():
    from flywheel_dagster.assets.definitions import build_definitions
    from flywheel_dagster.assets.overrides import TurnConfigError, check_overrides

    defs = build_definitions()
    check_overrides({"rlvr_policy": {"stage": "rl", "steps": 3, "lr": 1, "domain_weights": {"math": 1.0},
                                     "adam_betas": [0.8, 0.9]},
                     "eval_report": {"n_samples": 1, "suites": ["heldout"]}, "verifiers": {"max_tasks": 0},
                     "rollout_engine": {"engine": "vllm"}}, defs)
    # settings every stage reads pass under the default RFT stage, RFT's own under rft_rl and not under rl
    check_overrides({"rlvr_policy": {"rft_steps": 5, "seed": 3, "use_pool": False, "backend": "torch"}}, defs)
    check_overrides({"rlvr_policy": {"stage": "rft_rl", "rft_steps": 5, "steps": 2}}, defs)
    with pytest.raises(TurnConfigError, match=r"--set rlvr_policy.rft_steps: an RFT setting, which stage rl never"):
        check_overrides({"rlvr_policy": {"stage": "rl", "rft_steps": 5}}, defs)


def test_resource_override_keeps_the_resources_other_fields():
    """Dagster replaces a resource's whole config: the override is laid over what the Definitions configured."""
    import dagster as dg

    from flywheel_dagster.assets.definitions import build_definitions
    from flywheel_dagster.assets.overrides import resource_config

    defs = build_definitions()
    job = defs.resolve_job_def("base_model_job")
    kept = defs.resources["storage"]._get_non_default_public_field_values()
    cfg = resource_config(job, {"rollout_engine": {"engine": "vllm"}, "storage": {}}, defs)
    assert cfg["rollout_engine"] == {"config": {"engine": "vllm"}}
    assert set(cfg["storage"]["config"]) == set(kept)
    assert dg.validate_run_config(job, {"resources": cfg})
    assert resource_config(job, {"no_such_resource": {"x": 1}}, defs) == {}  # only resources the job uses


def test_dagster_home_defaults_to_flywheel_home(flywheel_home, monkeypatch):
    from flywheel_dagster.assets.turn import PROJECT_DAGSTER_YAML, turn_instance

    monkeypatch.setenv("DAGSTER_HOME", "set-so-that-monkeypatch-restores-it")
    monkeypatch.delenv("DAGSTER_HOME")
    instance = turn_instance(flywheel_home)
    home = flywheel_home.home / "dagster"
    try:
        assert Path(instance.root_directory) == home and not instance.is_ephemeral
        assert (home / "dagster.yaml").read_text() == PROJECT_DAGSTER_YAML.read_text()
        assert type(instance.run_storage).__name__ == "SqliteRunStorage"  # the runs the UI reads
        assert instance.get_runs_count() == 0 and (home / "history" / "runs").is_dir()
    finally:
        instance.dispose()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")  # a user's own settings are kept
    turn_instance(flywheel_home).dispose()
    assert (home / "dagster.yaml").read_text() == "telemetry:\n  enabled: false\n"


def _log_line(i: int, day: str) -> str:
    return json.dumps({"id": f"u{i}", "timestamp": f"{day}T09:00:00Z", "task_id": f"m{i % 7}", "domain": "math",
                       "model": "team-model:v3", "messages": [{"role": "user", "content": f"What is {i} + 2?"},
                                                              {"role": "assistant", "content": f"Answer: {i + 3}"}],
                       "outcome": {"status": "failure", "passed": False}, "reference": {"answer": str(i + 2)}})


def test_a_failed_data_check_stops_the_turn_before_training(flywheel_home, tmp_path, capsys, monkeypatch):
    """Your logs, a fifth of them broken: the data side runs, the CLI shows what it read and which ERROR check
    failed, and nothing trains (exit 1)."""
    day = "2026-12-01"
    logs = tmp_path / "team_logs" / day
    logs.mkdir(parents=True)
    (logs / "a.jsonl").write_text("\n".join([_log_line(i, day) for i in range(40)] + ["{broken"] * 10) + "\n")
    monkeypatch.setenv("DAGSTER_HOME", str(flywheel_home.home / "dagster_home"))
    code = main(["turn", "--day", day, "--set", f"storage.raw_logs_uri={tmp_path / 'team_logs'}/{{date}}/",
                 "--set", "verifiers.max_tasks=4"])
    out, err = capsys.readouterr()
    assert code == 1, err[-2000:]
    assert "data side of 2026-12-01: logs your logs" in out
    assert "read 50 lines: ingested 40, quarantined 10 (20.0%)" in out
    assert "ERROR task_logs:task_logs_quarantine_rate" in out
    assert "stopped before training" in err and "--no-stop-on-failed-checks" in err
    assert not (flywheel_home.home / "eval").exists() or not any((flywheel_home.home / "eval").iterdir())
