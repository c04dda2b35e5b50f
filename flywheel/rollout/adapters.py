"""LoRA adapter folders: what a LoRA stage saves, and how anything that loads a checkpoint loads one.

An adapter folder (peft's `save_pretrained` of a LoRA policy: `adapter_config.json` naming its base folder,
`adapter_model.safetensors`, the tokenizer) also holds `flywheel_adapter.json`: its base and the fingerprint
of that base's weight files. `load_adapter_model` loads the base (`flywheel.rollout.checkpoint.load_model`;
the base may itself be an adapter folder) and merges the adapter in memory, refusing a base whose files
changed since the adapter was trained (a policy folder overwritten by a later turn, say); `merge_adapter`
writes the merged checkpoint for export; `adapter_lineage` is what the registry tags. Training adapters is
`flywheel.train.common.lora`.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

ADAPTER_CONFIG, ADAPTER_INFO = "adapter_config.json", "flywheel_adapter.json"
CHUNK = 1 << 20


def is_adapter_dir(path: str | Path) -> bool:
    """True for a folder holding a peft adapter (`adapter_config.json` and its weights)."""
    p = Path(path)
    return (p / ADAPTER_CONFIG).is_file() and any(p.glob("adapter_model.*"))


def files_hash(folder: str | Path) -> str | None:
    """sha256 over a folder's `*.safetensors` files (names and bytes, in name order); None without any."""
    files = sorted(Path(folder).glob("*.safetensors"))
    if not files:
        return None
    h = hashlib.sha256()
    for f in files:
        h.update(f.name.encode())
        with open(f, "rb") as fh:
            while chunk := fh.read(CHUNK):
                h.update(chunk)
    return h.hexdigest()


def write_adapter_info(out: str | Path, extra: dict[str, Any] | None = None) -> Path:
    """`flywheel_adapter.json` beside a saved adapter: its base folder and that folder's weights fingerprint
    (an adapter over a base whose weights changed since is refused when loaded)."""
    base = json.loads((Path(out) / ADAPTER_CONFIG).read_text()).get("base_model_name_or_path") or ""
    info = {"base_model": base, "base_weights_sha256": _base_fingerprint(base), **(extra or {})}
    (Path(out) / ADAPTER_INFO).write_text(json.dumps(info, indent=1, sort_keys=True, default=str))
    return Path(out) / ADAPTER_INFO


def _base_fingerprint(base: str | Path) -> str | None:
    """A base folder's fingerprint: its weight files' hash, or for an adapter folder its chained one."""
    p = Path(base)
    return _adapter_fingerprint(p) if is_adapter_dir(p) else files_hash(p)


def _adapter_fingerprint(p: Path) -> str | None:
    """An adapter folder's fingerprint: its adapter weights' hash and its own base's, chained."""
    own = files_hash(p) or ""
    try:
        base = json.loads((p / ADAPTER_INFO).read_text()).get("base_weights_sha256") or ""
    except (OSError, json.JSONDecodeError):
        base = ""
    return hashlib.sha256(f"{own}:{base}".encode()).hexdigest()


def adapter_lineage(path: str | Path) -> dict[str, str]:
    """Registry tags of an adapter folder: that it is one, its base model and rank (empty for a full model)."""
    p = Path(path)
    if not is_adapter_dir(p):
        return {}
    cfg = json.loads((p / ADAPTER_CONFIG).read_text())
    try:
        info = json.loads((p / ADAPTER_INFO).read_text())
    except (OSError, json.JSONDecodeError):
        info = {}
    return {"adapter": "lora", "adapter_base_model": str(cfg.get("base_model_name_or_path") or ""),
            "adapter_base_weights_sha256": str(info.get("base_weights_sha256") or ""),
            "lora_rank": str(cfg.get("r", ""))}


def load_adapter_model(path: str | Path, device: str = "cpu", dtype: str = "float32") -> tuple[Any, Any]:
    """(model with the adapter merged in, tokenizer) from an adapter folder: its base loaded (recursively, an
    adapter's base may be an adapter folder), checked against the fingerprint the adapter was saved with."""
    from peft import PeftModel  # heavy

    from flywheel.rollout.checkpoint import load_model, load_tokenizer

    p = Path(path)
    base = json.loads((p / ADAPTER_CONFIG).read_text()).get("base_model_name_or_path")
    if not base or not Path(base).is_dir():
        raise FileNotFoundError(f"adapter {p}: its base model folder {base!r} is not there")
    try:
        want = json.loads((p / ADAPTER_INFO).read_text()).get("base_weights_sha256")
    except (OSError, json.JSONDecodeError):
        want = None
    if want and (got := _base_fingerprint(base)) != want:
        raise ValueError(f"adapter {p} was trained over {base} with weights {want[:12]}…, which now has "
                         f"{str(got)[:12]}…: merge adapters for export (merge_adapter) before their base changes")
    model, _ = load_model(base, device=device, dtype=dtype)
    merged = PeftModel.from_pretrained(model, str(p)).merge_and_unload()
    return merged, load_tokenizer(p)


def merge_adapter(path: str | Path, out: str | Path) -> Path:
    """Export: the adapter folder `path` merged into its base, saved as a plain HF checkpoint folder at `out`."""
    model, tok = load_adapter_model(path)
    Path(out).mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out))
    tok.save_pretrained(str(out))
    return Path(out)
