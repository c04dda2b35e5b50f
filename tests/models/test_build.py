"""Models: tokenizer, chat template, HF loading, the tiny recipe and its cache, SFT, the CLI."""

from __future__ import annotations

import json
import time

import pytest
import torch

pytest_plugins = ("tests.fixtures_models",)


def _corpus():
    from flywheel.rollout.chat import render_example
    from flywheel.tasks.suites import heldout_suite

    return [render_example(d, t.prompt, t.solution) for d in ("math", "code", "agent") for t in heldout_suite(d, 10)]


def test_tokenizer_round_trips_and_keeps_markers_whole(tiny_model):
    _, tok = tiny_model
    for text in _corpus() + ["unseen: 𝛑 ü ≠ \t tabs", ""]:
        ids = tok(text, add_special_tokens=False)["input_ids"]
        assert tok.decode(ids, skip_special_tokens=False) == text
    for marker in ("<tool_call>", "</tool_call>", "<tool_result>", "</tool_result>", "<|assistant|>", "<|end|>"):
        ids = tok(marker, add_special_tokens=False)["input_ids"]
        assert len(ids) == 1, marker
    assert tok.convert_ids_to_tokens(tok.eos_token_id) == "<|end|>"
    assert tok.pad_token_id != tok.eos_token_id and tok.padding_side == "left"
    assert tok(" 123", add_special_tokens=False)["input_ids"][-3:] == [tok.convert_tokens_to_ids(c) for c in "123"]


def test_render_prompt_is_the_one_template():
    from flywheel.rollout.chat import EOS, render_example, render_prompt

    p = render_prompt("math", "What is 2 + 2?")
    assert p.startswith("<|user|>") and p.endswith("<|assistant|>") and "[math] What is 2 + 2?" in p
    assert render_example("math", "What is 2 + 2?", "Answer: 4") == p + "Answer: 4" + EOS


def test_hf_loader_loads_the_saved_tiny_model(tiny_model_dir):
    from transformers import LlamaForCausalLM

    from flywheel.rollout.checkpoint import is_checkpoint_dir, load_model, param_count

    assert is_checkpoint_dir(tiny_model_dir)
    model, tok = load_model(tiny_model_dir, dtype="float32")
    assert isinstance(model, LlamaForCausalLM) and not model.training
    assert model.config.vocab_size == len(tok)
    info = json.loads((tiny_model_dir / "flywheel_build.json").read_text())
    assert param_count(model) == info["params"]
    ids = torch.tensor([tok("<|user|>[math] hi", add_special_tokens=False)["input_ids"]])
    assert model(input_ids=ids).logits.shape == (1, ids.shape[1], len(tok))


def test_loader_rejects_a_folder_that_is_not_a_checkpoint(tmp_path):
    from flywheel.rollout.checkpoint import load_model

    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(FileNotFoundError, match="not a Hugging Face checkpoint"):
        load_model(tmp_path)


def test_build_is_cached_by_recipe_hash(tiny_model_dir):
    from dataclasses import replace

    from flywheel.models.build import build_tiny_model, cached_build
    from flywheel.models.recipe import QUICK

    t0 = time.perf_counter()
    again = build_tiny_model(tiny_model_dir, QUICK)
    assert again.cached and time.perf_counter() - t0 < 5
    assert again.recipe_hash == QUICK.hash() and set(again.pass_rates) == {"math", "code", "agent"}
    assert cached_build(tiny_model_dir, replace(QUICK, seed=1)) is None  # another recipe: rebuild
    assert QUICK.hash() != replace(QUICK, seed=1).hash()


def test_sft_mix_perturbs_a_share_of_math_answers():
    from dataclasses import replace

    from flywheel.models.recipe import QUICK
    from flywheel.models.sft_data import sft_mix
    from flywheel.tasks.suites import train_suite

    gold = {t.prompt: t.reference["answer"] for t in train_suite("math", QUICK.n_math)}
    mix = sft_mix(replace(QUICK, math_noise=0.5))
    wrong = [r for d, p, r in mix if d == "math" and not r.endswith(f"Answer: {gold[p]}")]
    assert 0.35 < len(wrong) / len(gold) < 0.65
    assert all(r.split("Answer: ")[-1].isdigit() for r in wrong)
    assert {d for d, _, _ in mix} == {"math", "code", "agent"}
    clean = sft_mix(replace(QUICK, math_noise=0.0))
    assert all(r.endswith(f"Answer: {gold[p]}") for d, p, r in clean if d == "math")


def test_sft_lowers_the_loss(tiny_model_dir):
    from flywheel.models.sft import SftConfig, supervised_finetune
    from flywheel.rollout.checkpoint import load_model
    from flywheel.tasks.suites import train_suite

    model, tok = load_model(tiny_model_dir, trainable=True)
    ex = [("math", t.prompt, t.solution) for t in train_suite("math", 8)]
    losses = supervised_finetune(model, tok, ex, SftConfig(steps=25, batch_size=8, lr=5e-3, warmup=2))
    assert losses[-1] < losses[0] * 0.8


def test_resolve_base_model_tiny_and_hf(tiny_model_dir, flywheel_home):
    from flywheel.models import resolve_base_model

    hf = resolve_base_model(str(tiny_model_dir), flywheel_home)  # a path: the user's own checkpoint
    assert hf.kind == "hf" and hf.path == tiny_model_dir.resolve() and hf.vocab > 100
    assert hf.params == json.loads((tiny_model_dir / "flywheel_build.json").read_text())["params"]
    named = resolve_base_model(tiny_model_dir.name, flywheel_home, models_dir=tiny_model_dir.parent)  # not a tiny-v* name
    assert named.kind == "hf" and named.path == hf.path
    with pytest.raises(FileNotFoundError, match="no HF checkpoint folder"):
        resolve_base_model("qwen-not-here", flywheel_home)


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


def test_math_scratchpad_is_arithmetically_true():
    import re

    from flywheel.models.sft_data import scratchpad
    from flywheel.tasks.suites import train_suite

    tasks = train_suite("math", 300)
    for t in tasks:
        s = scratchpad(t.solution)
        assert s.endswith(f"Answer: {t.reference['answer']}")
        for expr, val in re.findall(r"(\d+(?:[+\-*]\d+)+)=(\d+)", s):  # every digit step and direct op
            assert eval(expr) == int(val), (t.solution, s)
        for a, op, b, res in re.findall(r"(\d+)([+\-*])(\d+): .*? so (\d+)", s):
            assert eval(f"{a}{op}{b}") == int(res)
    assert scratchpad("36 + 45 = 81. Answer: 81") == "36+45: 6+5=11, 3+4+1=8 so 81. Answer: 81"
    assert scratchpad("31 - 16 = 15. Answer: 15") == "31-16: 11-6=5, 2-1=1 so 15. Answer: 15"
    assert scratchpad("4 * 16 = 64. Answer: 64") == "4*16: 4*6=24, 4*1+2=6 so 64. Answer: 64"
