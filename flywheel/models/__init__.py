"""flywheel.models: base models: the tiny model's recipe, SFT data, tokenizer, build and measurement.

`resolve_base_model(release, paths)` is what the `base_model` asset calls: a `tiny-*` release
is built (or reused from cache) under `paths.base_models / release`; any other release names a
local HF checkpoint folder (an existing path, or a folder of that name in the releases
directory) that is validated (config, weights, tokenizer with a chat template) and registered as is.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from flywheel.models.build import build_tiny_model
from flywheel.models.recipe import is_tiny_release, recipe_for
from flywheel.paths import FlywheelPaths
from flywheel.rollout.chat import ensure_chat_template
from flywheel.rollout.checkpoint import is_checkpoint_dir, load_tokenizer


@dataclass
class BaseModelInfo:
    """A usable base model: where its checkpoint folder is and what it is."""

    release: str
    path: Path
    kind: str  # "tiny" (built here) | "hf" (brought by the user)
    params: int
    vocab: int
    pass_rates: dict[str, dict[str, float]] = field(default_factory=dict)
    recipe_hash: str = ""
    cached: bool = False
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["path"] = str(self.path)
        return d


def resolve_base_model(release: str, paths: FlywheelPaths, models_dir: str | Path | None = None,
                       rebuild: bool = False) -> BaseModelInfo:
    """Build/reuse the tiny model for `tiny-*` releases, else locate and validate the HF checkpoint `release`."""
    if is_tiny_release(release):
        r = build_tiny_model(paths.base_models / release, recipe_for(release), force=rebuild)
        return BaseModelInfo(release, r.path, "tiny", r.params, r.vocab, r.pass_rates, r.recipe_hash, r.cached, r.seconds)
    candidates = [Path(release).expanduser()]
    if models_dir is not None:
        candidates.append(Path(models_dir) / release)
    candidates += [paths.releases / release, paths.base_models / release]
    for p in candidates:
        if is_checkpoint_dir(p):
            return _describe_checkpoint(release, p.resolve())
    raise FileNotFoundError(
        f"base model {release!r}: not a tiny-* release and no HF checkpoint folder found at "
        f"{', '.join(str(c) for c in candidates)}"
    )


def _describe_checkpoint(release: str, path: Path) -> BaseModelInfo:
    """Params and vocab from config.json (no weights loaded: a 7B model stays on disk)."""
    cfg = json.loads((path / "config.json").read_text())
    cfg = cfg.get("text_config", cfg)
    tok = ensure_chat_template(load_tokenizer(path), path)  # fails loudly without tokenizer files or template
    params = _estimate_params(cfg)
    return BaseModelInfo(release, path, "hf", params, len(tok))


def _estimate_params(cfg: dict[str, Any]) -> int:
    """Llama-family parameter count from the config (exact for Llama/Qwen2 without biases)."""
    try:
        h, n, v, i = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["vocab_size"], cfg["intermediate_size"]
    except KeyError:
        return 0
    heads = cfg.get("num_attention_heads", 1)
    kv = cfg.get("num_key_value_heads", heads)
    hd = cfg.get("head_dim") or h // heads
    attn = h * heads * hd * 2 + h * kv * hd * 2
    emb = v * h * (1 if cfg.get("tie_word_embeddings") else 2)
    return int(emb + n * (attn + 3 * h * i + 2 * h) + h)


__all__ = ["BaseModelInfo", "resolve_base_model"]
