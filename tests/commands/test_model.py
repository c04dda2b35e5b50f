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


def test_cli_model_merge_exports_a_lora_policy(qwen_checkpoint, tmp_path, capsys):
    from flywheel.cli import main
    from flywheel.rollout.checkpoint import load_model
    from flywheel.train.common.lora import LoraSpec, apply_lora, write_adapter_info

    model, tok = load_model(qwen_checkpoint, trainable=True)
    apply_lora(model, LoraSpec(lora_rank=4), qwen_checkpoint).save_pretrained(str(tmp_path / "policy"))
    tok.save_pretrained(str(tmp_path / "policy"))
    write_adapter_info(tmp_path / "policy")
    assert main(["model", "merge", str(tmp_path / "policy"), "--out", str(tmp_path / "merged"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (tmp_path / "merged" / "config.json").is_file() and out["merged"] == str(tmp_path / "merged")
    assert main(["model", "merge", str(qwen_checkpoint), "--out", str(tmp_path / "x")]) == 2  # not an adapter
