"""The generic HF checkpoint loader: loads the saved tiny model, refuses a folder that is not a checkpoint."""

from __future__ import annotations

import json

import pytest
import torch


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
