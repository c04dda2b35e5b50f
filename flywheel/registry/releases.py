"""Base-model releases: where they appear, so a sensor can notice a new one.

A release is a checkpoint folder (an HF `save_pretrained` folder: `config.json` plus
weights) directly under the releases directory; its folder name is the release name and
the `base_model` partition key. The directory is `FlywheelPaths.releases` (by default
`models/base` under the home, the same folder the `base_model` asset loads non-tiny releases
from), so dropping a checkpoint there is all a user does to start a backfill for it.
"""

from __future__ import annotations

import re
from pathlib import Path

_WEIGHTS = ("*.safetensors", "*.bin", "*.pt")
_VALID_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def is_complete_checkpoint(path: Path) -> bool:
    """A config and at least one weights file, and no `.incomplete` marker (a copy still in progress)."""
    if not (path / "config.json").is_file() or (path / ".incomplete").exists():
        return False
    return any(any(path.glob(p)) for p in _WEIGHTS)


def discover_releases(directory: str | Path) -> list[str]:
    """Release names (folder names) of complete checkpoints under `directory`, oldest first."""
    d = Path(directory)
    if not d.is_dir():
        return []
    found = [p for p in d.iterdir() if p.is_dir() and _VALID_NAME.match(p.name) and is_complete_checkpoint(p)]
    return [p.name for p in sorted(found, key=lambda p: (p.stat().st_mtime, p.name))]

