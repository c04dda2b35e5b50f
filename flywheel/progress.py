"""Progress bars for long work (SFT, RL steps), on stderr and only where a person watches.

A bar shows when stderr is an interactive terminal (`flywheel train`, the learning proof); in CI
logs and pipes it stays quiet, and inside Dagster steps (`flywheel turn`, the UI) stderr goes to the
compute logs (the asset metadata and MLflow carry the numbers). `FLYWHEEL_PROGRESS=1` forces bars
on, `=0` off.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from tqdm import tqdm


def progress_enabled() -> bool:
    """Whether bars should draw: the env override, else whether stderr is a terminal."""
    flag = os.environ.get("FLYWHEEL_PROGRESS", "")
    if flag in ("0", "1"):
        return flag == "1"
    return sys.stderr.isatty()


def progress_bar(total: int, desc: str, unit: str = " step", initial: int = 0) -> Any:
    """A tqdm bar over `total` units (a disabled one that accepts the same calls when not shown)."""
    return tqdm(total=total, initial=initial, desc=desc, unit=unit, file=sys.stderr, leave=False,
                mininterval=0.5, dynamic_ncols=True, disable=not progress_enabled())


def quiet_transformers_bars() -> None:
    """transformers draws bars of its own (loading weights, writing shards); hide them wherever ours
    are hidden, so a turn's output and CI logs stay readable. Never turns them on."""
    if not progress_enabled():
        from transformers.utils import logging as hf_logging  # heavy: callers have loaded it already

        hf_logging.disable_progress_bar()
