"""`flywheel evaluate`: JSON out, a baseline comparison, the report folder, and clear errors."""

from __future__ import annotations

import json
from pathlib import Path


def test_evaluate_cli_json(random_tiny, tmp_path, capsys):
    import torch

    from flywheel.cli import main

    torch.set_num_threads(1)
    path = random_tiny(tmp_path / "tiny")
    capsys.readouterr()  # building the checkpoint may print (transformers -> accelerate -> deepspeed's notice)
    argv = ["evaluate", str(path), "--baseline", str(path), "--n-samples", "1", "--tasks-per-domain", "math=2,agent=1",
            "--max-new-tokens", "16", "--out", str(tmp_path / "rep"), "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["pass_rates"]) == {"math", "agent", "overall"}
    assert out["comparison"]["diffs"]["overall"]["value"] == 0.0  # same weights, same seed, same tasks
    assert Path(out["report"]["chart"]).exists()
    assert main(["evaluate", str(tmp_path / "missing"), "--json"]) == 2
    assert main(["evaluate", str(path), "--tasks-per-domain", "poetry=3"]) == 2
