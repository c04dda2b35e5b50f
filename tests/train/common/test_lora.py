"""LoRA (peft) as a training option of both stages: declared once, adapters trained with the base frozen, saved
as an adapter folder over its base (loaded merged, refused over a changed base, merged on request for export),
synced to the generator adapter-only, registered with its base model's lineage."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from flywheel.tasks.suites import train_suite


def test_the_option_is_declared_once_and_reaches_both_stages():
    from flywheel.train.api import rft_stage_config
    from flywheel.train.common.lora import LORA_FIELDS, LoraSpec, lora_of
    from flywheel.train.config import TrainConfig
    from flywheel.train.rft.config import RFT_RUN_FIELDS, RftConfig

    for name in LORA_FIELDS:
        spec = LoraSpec.__dataclass_fields__[name]
        for cls in (TrainConfig, RftConfig):
            f = cls.__dataclass_fields__[name]
            assert (f.default, f.metadata["help"]) == (spec.default, spec.metadata["help"])
        assert name in RFT_RUN_FIELDS  # the run's value, not a second `rft_` setting
    assert lora_of(rft_stage_config(TrainConfig(lora_rank=8), None, None)) == LoraSpec(lora_rank=8)
    with pytest.raises(ValueError, match="lora_rank"):
        TrainConfig(lora_rank=-1)


def test_adapters_train_with_the_base_frozen_and_sync_alone(qwen_checkpoint, tmp_path):
    from flywheel.rollout.checkpoint import load_model
    from flywheel.rollout.torch_engine import recompute_logprobs
    from flywheel.rollout.types import SamplingParams
    from flywheel.train.common.lora import LoraSpec, adapter_state, apply_lora, trainable_params
    from flywheel.train.common.rollouts import PolicyGenerator
    from flywheel.train.common.sft import SftConfig, supervised_finetune

    model, tok = load_model(qwen_checkpoint, trainable=True)
    base = {k: v.clone() for k, v in model.state_dict().items()}
    model = apply_lora(model, LoraSpec(lora_rank=4), qwen_checkpoint)
    trainable, total = trainable_params(model)
    assert 0 < trainable < total / 10
    gen = PolicyGenerator(model, tok, shared=False)  # the pipeline's own copy, synced per version
    t = train_suite("math", 4)
    supervised_finetune(model, tok, [("math", x.prompt, x.solution) for x in t], SftConfig(steps=3, batch_size=2,
                                                                                          lr=1e-2, warmup=0))
    after = model.get_base_model().state_dict()
    for k, v in base.items():  # the base weights did not move (peft names them base_layer)
        assert torch.equal(after.get(k, after.get(k.replace(".weight", ".base_layer.weight").replace(
            ".bias", ".base_layer.bias"))), v), k
    sent = adapter_state(model)
    assert sent and all("lora_" in k for k in sent) and sum(v.numel() for v in sent.values()) == trainable
    gen.sync(model, 1)
    sp = SamplingParams(temperature=0.0, max_new_tokens=5)
    mine = PolicyGenerator(model, tok, shared=True).generate(t[:2], 1, sp)
    assert [g[0].token_ids for g in gen.generate(t[:2], 1, sp)] == [g[0].token_ids for g in mine]
    r = mine[0][0]  # the engine's fast decode path applies the adapters (checked against a plain forward)
    torch.testing.assert_close(torch.tensor(r.logprobs), recompute_logprobs(model, r.prompt_ids, r.token_ids),
                               atol=1e-4, rtol=1e-4)
    assert any(v.abs().sum() > 0 for k, v in sent.items() if "lora_B" in k)  # the adapters did move
    # what an engine serving adapters starts from: the frozen base, under its HF names
    from flywheel.train.common.lora import save_base

    folder = save_base(model, tmp_path / "base")
    reloaded = load_model(folder)[0].state_dict()
    assert set(reloaded) == set(base) and all(torch.equal(reloaded[k], v) for k, v in base.items())


def test_lora_turn_rft_then_grpo_registers_one_adapter_over_the_base(qwen_checkpoint, flywheel_home, tmp_path,
                                                                   seed_mlflow_db, log_gold):
    from flywheel.registry.mlflow_registry import Registry
    from flywheel.rollout.checkpoint import is_checkpoint_dir, load_model
    from flywheel.train.api import train_policy
    from flywheel.train.common.lora import adapter_lineage, merge_adapter
    from flywheel.train.config import TrainConfig
    from flywheel.train.rft.config import RftConfig

    seed_mlflow_db(flywheel_home)
    log_gold(flywheel_home, train_suite("math", 4))
    cfg = TrainConfig(stage="rft_rl", steps=1, prompts_per_step=2, group_size=2, max_new_tokens=8, dev_every=0,
                      domain_weights={"math": 1.0}, replay_tasks_per_domain=0, checkpoint_every=0, lora_rank=4)
    rft = RftConfig(tasks_per_domain={"math": 4}, samples_per_task=1, max_new_tokens=8, steps=2, batch_size=2,
                    lr=1e-2, include_logs=True)
    res = train_policy(cfg, qwen_checkpoint, "qwen2-random", paths=flywheel_home, tasks=train_suite("math", 4),
                       rft=rft)
    rft_dir, policy = flywheel_home.models / "rft" / "qwen2-random", res.policy_dir
    for folder in (rft_dir, policy):  # adapters only, each over the full-weight base (GRPO went on with RFT's)
        assert (folder / "adapter_config.json").is_file() and not (folder / "config.json").exists()
        assert adapter_lineage(folder)["adapter_base_model"] == str(qwen_checkpoint.resolve())
        assert is_checkpoint_dir(folder)
    size = sum(f.stat().st_size for f in policy.glob("adapter_model.*"))
    assert size < sum(f.stat().st_size for f in qwen_checkpoint.glob("*.safetensors")) / 5
    merged_model, _ = load_model(policy)  # base + adapter, merged in memory: what the engines sample
    base_model, _ = load_model(qwen_checkpoint)
    ids = torch.tensor([[3, 4, 5, 6]])
    assert not torch.allclose(merged_model(ids).logits, base_model(ids).logits)
    out = merge_adapter(policy, tmp_path / "export")  # export: a plain HF folder
    assert (out / "config.json").is_file() and not (out / "adapter_config.json").exists()
    torch.testing.assert_close(load_model(out)[0](ids).logits, merged_model(ids).logits)
    ref = Registry(flywheel_home.mlflow_uri).register(policy, lineage={"base_model": "qwen2-random"})
    assert ref.tags["flywheel.adapter"] == "lora" and ref.tags["flywheel.lora_rank"] == "4"
    assert ref.tags["flywheel.adapter_base_model"] == str(qwen_checkpoint.resolve())
    # the adapter remembers its base's weights: over a changed base it is refused, not silently wrong
    moved = shutil.copytree(qwen_checkpoint, tmp_path / "base")
    cfg_file = policy / "adapter_config.json"
    ac = json.loads(cfg_file.read_text())
    ac["base_model_name_or_path"] = str(moved)
    cfg_file.write_text(json.dumps(ac))
    assert load_model(policy)  # the same weights elsewhere: fine
    from safetensors.torch import load_file, save_file

    w = load_file(str(moved / "model.safetensors"))
    w["model.norm.weight"] = w["model.norm.weight"] + 1
    save_file(w, str(moved / "model.safetensors"), metadata={"format": "pt"})
    with pytest.raises(ValueError, match="merge adapters for export"):
        load_model(policy)
