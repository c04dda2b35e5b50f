"""`flywheel model build` / `sample`: the build cache hit, bounded samples, an unknown release refused."""

from __future__ import annotations

import json


def test_cli_model_build_and_sample(tiny_model_dir, flywheel_home, capsys):
    from flywheel.cli import main

    assert main(["model", "build", "--release", "tiny-quick", "--out", str(tiny_model_dir), "--json"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["cached"] is True and out["path"] == str(tiny_model_dir)
    assert main(["model", "sample", "--model", str(tiny_model_dir), "--domain", "math", "--n", "2",
                 "--max-new-tokens", "8", "--json"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert len(out["samples"]) == 2 and all(s["tokens"] <= 8 for s in out["samples"])
    assert main(["model", "build", "--release", "qwen"]) == 2
