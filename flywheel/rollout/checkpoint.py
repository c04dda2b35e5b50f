"""Load any Hugging Face causal LM from a local folder: how users bring Qwen, Llama, or the tiny model.

Offline only (`local_files_only=True`): the folder must hold `config.json`, the weights
(safetensors) and the tokenizer files with a chat template (`flywheel.rollout.chat`), or be a LoRA adapter
folder over such a checkpoint. The tokenizer is set to left padding and gets a pad token (EOS) if it has
none, which is what batched sampling needs. Both rollout engines,
the trainer and the base-model resolver load checkpoints through here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from flywheel.progress import quiet_transformers_bars

ADAPTER_CONFIG = "adapter_config.json"
"""A peft adapter folder's config (`flywheel.rollout.adapters`): loaded over its base, merged."""
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def is_checkpoint_dir(path: str | Path) -> bool:
    """True if `path` looks like an HF causal-LM folder (config + weights) or a LoRA adapter folder over one."""
    p = Path(path)
    has_weights = any(p.glob("*.safetensors")) or any(p.glob("*.bin"))
    return p.is_dir() and has_weights and ((p / "config.json").is_file() or (p / ADAPTER_CONFIG).is_file())


def load_tokenizer(path: str | Path) -> Any:
    """The checkpoint's tokenizer, left-padded, with a pad token (EOS when it has none); a tiny model built
    before its tokenizer carried the project's chat template gets it (`chat.with_fallback_template`)."""
    from transformers import AutoTokenizer  # heavy: loaded only when a checkpoint is

    from flywheel.rollout.chat import with_fallback_template

    tok = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    tok.padding_side = "left"
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    return with_fallback_template(tok)


def load_model(path: str | Path, device: str = "cpu", dtype: str = "float32",
               trainable: bool = False) -> tuple[Any, Any]:
    """(model, tokenizer) from a local checkpoint folder; eval mode unless `trainable`. A LoRA adapter folder
    loads as its base with the adapter merged in (`flywheel.train.common.lora.load_adapter_model`)."""
    from transformers import AutoModelForCausalLM  # heavy: loaded only when a checkpoint is

    quiet_transformers_bars()
    p = Path(path)
    if not is_checkpoint_dir(p):
        raise FileNotFoundError(f"{p} is not a Hugging Face checkpoint folder (config.json + *.safetensors)")
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {sorted(DTYPES)}, got {dtype!r}")
    if not (p / "config.json").is_file():
        from flywheel.rollout.adapters import load_adapter_model  # an adapter folder

        model, tok = load_adapter_model(p, device=device, dtype=dtype)
        return model.train(trainable), tok
    model = AutoModelForCausalLM.from_pretrained(str(p), local_files_only=True, dtype=DTYPES[dtype])
    model.to(device)
    model.train(trainable)
    return model, load_tokenizer(p)


def param_count(model: Any) -> int:
    """Number of parameters (what a build or a resolved checkpoint reports)."""
    return sum(p.numel() for p in model.parameters())
