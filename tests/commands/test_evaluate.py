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
            "--max-new-tokens", "16", "--test-tasks", "1", "--suite", "heldout", "test", "--out", str(tmp_path / "rep"),
            "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert {"math", "agent", "overall", "test/math", "test/overall"} <= set(out["pass_rates"])
    assert not any(u.startswith("production/") for u in out["pass_rates"])  # --suite chose the suites
    assert out["comparison"]["diffs"]["overall"]["value"] == 0.0  # same weights, same seed, same tasks
    assert Path(out["report"]["chart"]).exists()
    assert main(["evaluate", str(tmp_path / "missing"), "--json"]) == 2
    assert main(["evaluate", str(path), "--tasks-per-domain", "poetry=3"]) == 2


def test_evaluate_tasks_domain_count_pairs(tmp_path, capsys):
    import pytest

    from flywheel.cli import build_parser, main

    args = build_parser().parse_args(["evaluate", "m", "--tasks", "math:5, code:3"])
    assert args.tasks_per_domain == {"math": 5, "code": 3}
    from flywheel.tasks.suites import HELDOUT_SIZE

    assert build_parser().parse_args(["evaluate", "m"]).tasks_per_domain == dict(HELDOUT_SIZE)  # each env's own
    for bad, why in [("math:5,code:x", "'code:x': expected an integer >= 0, got 'x'"),
                     ("math", "'math' is not DOMAIN:COUNT (e.g. math:5,code:3)"),
                     ("math:-1", "'math:-1': expected an integer >= 0"),
                     ("math:1,math:2", "domain 'math' is given twice"), (",", "expected DOMAIN:COUNT pairs")]:
        with pytest.raises(SystemExit) as e:
            main(["evaluate", str(tmp_path), "--tasks", bad])
        assert e.value.code == 2 and f"argument --tasks: {why}" in capsys.readouterr().err
    assert main(["evaluate", str(tmp_path), "--tasks", "poetry:3", "--json"]) == 2  # no such domain
    assert "unknown domains ['poetry']" in json.loads(capsys.readouterr().out)["error"]
