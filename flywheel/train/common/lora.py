"""LoRA adapters (peft) as a training option of both stages: what is trained, saved, loaded and synced.

`lora_rank > 0` (a field of `LoraSpec`, carried by `TrainConfig` and `RftConfig` through `lora_option`, like
the placement) wraps the policy in peft LoRA adapters before the update (`apply_lora`): the base weights are
frozen, only the adapters train. What a stage saves is then an adapter folder (`adapter_config.json`,
`adapter_model.safetensors`, the tokenizer) whose `base_model_name_or_path` is the folder it was trained from,
plus `flywheel_adapter.json` with the base's weights fingerprint (`flywheel.rollout.adapters`: how
`load_model` loads such a folder merged over its base, refusing a base whose weights changed since, and
`merge_adapter`, the export). During RL, `adapter_state` is what a generator syncs (the adapters alone, not the whole model).
Light to import: peft and torch load when a model is wrapped or loaded.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flywheel.config_fields import check_choices, option
from flywheel.rollout.adapters import (  # noqa: F401 (re-exported: an adapter folder's files and loading)
    ADAPTER_CONFIG,
    ADAPTER_INFO,
    adapter_lineage,
    is_adapter_dir,
    load_adapter_model,
    merge_adapter,
    write_adapter_info,
)


@dataclass(frozen=True)
class LoraSpec:
    """Whether and how a stage trains LoRA adapters instead of every weight."""

    lora_rank: int = option(0, "LoRA rank (both stages): 0 = full fine-tuning; > 0 trains peft LoRA adapters of "
                               "this rank with the base weights frozen, saved as an adapter folder over its base "
                               "model (merged on request: flywheel.train.common.lora.merge_adapter).", ge=0)
    lora_alpha: float = option(0.0, "LoRA scaling alpha (0 = 2 x lora_rank).", ge=0)
    lora_targets: str = option("all-linear", "Modules LoRA adapts: all-linear (every linear layer of the blocks, "
                                             "not the LM head) or comma-separated module names (q_proj,v_proj).")

    def __post_init__(self) -> None:
        check_choices(self)

    @property
    def enabled(self) -> bool:
        return self.lora_rank > 0


LORA_FIELDS = tuple(f.name for f in dataclasses.fields(LoraSpec))
"""The fields a stage's config takes from `LoraSpec`."""


def lora_option(name: str) -> Any:
    """A stage config's field `name` with `LoraSpec`'s default, help and range (declared once, above)."""
    f = LoraSpec.__dataclass_fields__[name]
    r = f.metadata.get("range")
    return option(f.default, f.metadata["help"], ge=r.low if r is not None else None)


def lora_of(cfg: Any) -> LoraSpec:
    """The LoRA spec a stage config holds (all off for a config without the fields)."""
    return LoraSpec(**{n: getattr(cfg, n) for n in LORA_FIELDS if hasattr(cfg, n)})


def is_lora(model: Any) -> bool:
    """True for a peft-wrapped model."""
    return hasattr(model, "peft_config") and hasattr(model, "get_base_model")


def apply_lora(model: Any, spec: LoraSpec, base_path: str | Path | None = None) -> Any:
    """`model` ready for a LoRA stage (`spec` off: `model` itself). Started from a full checkpoint
    (`base_path`, recorded as the adapter's base): fresh adapters of `spec`. Started from an adapter folder
    (`model` is its merge): that adapter, trainable, over its own base (its rank kept), so a chain of stages
    and turns stays one adapter over one full-weight base."""
    if not spec.enabled:
        return model
    from peft import LoraConfig, PeftModel, get_peft_model  # heavy: only a LoRA run needs it

    if base_path is not None and is_adapter_dir(base_path):
        from flywheel.rollout.checkpoint import load_model

        device = next(model.parameters()).device
        del model
        base = json.loads((Path(base_path) / ADAPTER_CONFIG).read_text())["base_model_name_or_path"]
        inner, _ = load_model(base, device=str(device), trainable=True)
        return PeftModel.from_pretrained(inner, str(base_path), is_trainable=True)
    targets: Any = spec.lora_targets if spec.lora_targets == "all-linear" else \
        [t.strip() for t in spec.lora_targets.split(",") if t.strip()]
    cfg = LoraConfig(r=spec.lora_rank, lora_alpha=spec.lora_alpha or 2 * spec.lora_rank, lora_dropout=0.0,
                     target_modules=targets, task_type="CAUSAL_LM")
    wrapped = get_peft_model(model, cfg)
    if base_path is not None:
        wrapped.peft_config["default"].base_model_name_or_path = str(Path(base_path).resolve())
    return wrapped


def load_adapter_weights(model: Any, folder: str | Path) -> None:
    """Put the adapter weights saved in `folder` into the peft `model` (e.g. the best dev checkpoint's)."""
    from peft import set_peft_model_state_dict
    from safetensors.torch import load_file

    set_peft_model_state_dict(model, load_file(str(Path(folder) / "adapter_model.safetensors")))


def adapter_state(model: Any) -> dict[str, Any]:
    """The trainable tensors (the adapters: what changes in a LoRA step), keyed as in `model.state_dict()`."""
    return {n: p.detach() for n, p in model.named_parameters() if p.requires_grad}


def trainable_params(model: Any) -> tuple[int, int]:
    """(trainable, total) parameter counts."""
    params = list(model.parameters())
    return sum(p.numel() for p in params if p.requires_grad), sum(p.numel() for p in params)


def base_state_dict(model: Any) -> dict[str, Any]:
    """The frozen base weights of a peft model under their HF names (no adapter tensors)."""
    state = model.get_base_model().state_dict()
    return {k.replace(".base_layer.", "."): v for k, v in state.items() if "lora_" not in k}


def save_base(model: Any, out: str | Path) -> Path:
    """The base weights of a peft model as an HF folder (what an engine serving adapters starts from)."""
    base = model.get_base_model()
    base.save_pretrained(str(out), state_dict=base_state_dict(model))
    return Path(out)


