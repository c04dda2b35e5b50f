"""`flywheel train`'s help says what the command does by default: RFT, GRPO only as a stage."""

from __future__ import annotations

import pytest

from flywheel.cli import main


def test_train_help_names_the_default_stage(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    top = capsys.readouterr().out
    assert "GRPO-train" not in top and "RFT by default" in top
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--stage rft (fine-tune on the policy's verified samples; the default)" in text
    assert "(TrainConfig;" in text and "GRPOConfig" not in text


@pytest.mark.parametrize("argv, why", [
    (["--init-from", "rebase"], "--init-from rebase is a turn's choice"),
    (["--steps", "20"], "--steps is a GRPO setting, which --stage rft (the default) never reads; RFT's own is "
                        "--rft-steps; GRPO runs with --stage rl or rft_rl"),
    (["--stage", "rl", "--rft-steps", "20"], "--rft-steps is an RFT setting, which --stage rl never reads"),
])
def test_a_flag_the_stage_never_reads_is_refused(argv, why, flywheel_home, capsys):
    assert main(["train", *argv]) == 2
    err = capsys.readouterr().err
    assert why in err and len(err.strip().splitlines()) == 1
    assert not list(flywheel_home.models.glob("policies/*"))  # nothing trained


def test_an_rft_run_says_its_stage_and_links_its_mlflow_run(tiny_model_dir, flywheel_home, seed_mlflow_db, log_gold,
                                                           capsys):
    from flywheel.tasks.suites import train_suite

    seed_mlflow_db(flywheel_home)
    log_gold(flywheel_home, train_suite("math", 8))  # logged successes RFT re-verifies: something to train on
    argv = ["train", "--base-model", str(tiny_model_dir), "--release", "tiny-cli", "--no-use-pool",
            "--replay-tasks-per-domain", "8", "--rft-tasks-per-domain", "math=4", "--rft-samples-per-task", "2",
            "--rft-max-new-tokens", "24", "--rft-steps", "1", "--rft-batch-size", "2", "--rft-include-logs"]
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err[-500:]
    assert "trained 1 steps" in out and "(rft); pass share of its samples" in out
    assert "mlflow run: http://127.0.0.1:5000/#/experiments/" in out
