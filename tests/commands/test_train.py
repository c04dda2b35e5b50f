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
