"""Progress of long work (base-model SFT, RFT, RL steps, evaluation): a bar where a person watches a
terminal, and progress lines wherever the work runs.

A bar shows when stderr is an interactive terminal (`flywheel train`, the learning proof); in CI
logs and pipes it stays quiet. `FLYWHEEL_PROGRESS=1` forces bars on, `=0` off.

Every bar also writes lines ("RLVR steps: 40/120 steps (33%), 52s elapsed, ETA 1m44s, reward=0.512")
to the `flywheel.progress` logger at INFO, at most every `LOG_EVERY_S` seconds and once at the end.
Dagster manages that logger (`dagster.yaml` `python_logs`), so inside a run the lines are the step's
event log in the UI; `flywheel turn` prints them on the console too.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from typing import Any

from tqdm import tqdm

LOGGER = "flywheel.progress"
"""The logger progress lines go to (named in dagster.yaml's `managed_python_loggers`)."""
LOG_EVERY_S = 15.0
"""Seconds between two progress lines of one piece of work."""


def progress_enabled() -> bool:
    """Whether bars should draw: the env override, else whether stderr is a terminal."""
    flag = os.environ.get("FLYWHEEL_PROGRESS", "")
    if flag in ("0", "1"):
        return flag == "1"
    return sys.stderr.isatty()


def _duration(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


class ProgressBar:
    """A tqdm bar (drawn only where `progress_enabled`) that also logs throttled progress lines."""

    def __init__(self, total: int, desc: str, unit: str = " steps", initial: int = 0,
                 every_s: float = LOG_EVERY_S) -> None:
        self.total, self.desc, self.unit, self.n, self.every_s = total, desc, unit, initial, every_s
        self.start, self.initial = time.perf_counter(), initial
        self.last_log = self.start
        self.postfix: dict[str, Any] = {}
        self.bar = tqdm(total=total, initial=initial, desc=desc, unit=unit, file=sys.stderr, leave=False,
                        mininterval=0.5, dynamic_ncols=True, disable=not progress_enabled())
        self.closed = False

    def line(self) -> str:
        """`desc: n/total unit (pct), elapsed, ETA[, postfix]` for the log."""
        elapsed = time.perf_counter() - self.start
        done = self.n - self.initial
        left = max(0, self.total - self.n)
        eta = f", ETA {_duration(elapsed / done * left)}" if done > 0 and left else ""
        pct = f" ({100 * self.n / self.total:.0f}%)" if self.total else ""
        extra = "".join(f", {k}={v}" for k, v in self.postfix.items())
        count = f"{self.n}/{self.total}" if self.total > 0 else f"{self.n}"  # total 0: not known in advance
        return f"{self.desc}: {count}{self.unit}{pct}, {_duration(elapsed)} elapsed{eta}{extra}"

    def update(self, n: int = 1) -> None:
        self.n += n
        self.bar.update(n)
        now = time.perf_counter()
        if now - self.last_log >= self.every_s and (self.n < self.total or self.total <= 0):
            self.last_log = now
            logging.getLogger(LOGGER).info(self.line())

    def set_postfix(self, refresh: bool = True, **values: Any) -> None:
        self.postfix = values
        self.bar.set_postfix(refresh=refresh, **values)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.bar.close()
            logging.getLogger(LOGGER).info(self.line())


def progress_bar(total: int, desc: str, unit: str = " steps", initial: int = 0) -> ProgressBar:
    """A bar over `total` units that logs its progress (see module doc)."""
    return ProgressBar(total, desc, unit, initial)


def phase_progress(desc: str) -> Any:
    """`progress(phase, done, total)` (RFT's collection) as one `ProgressBar` per phase, named `desc: phase`."""
    bars: dict[str, ProgressBar] = {}

    def report(phase: str, done: int, total: int) -> None:
        bar = bars.get(phase)
        if bar is None:
            bar = bars[phase] = ProgressBar(total, f"{desc}: {phase}", unit="")
        bar.update(done - bar.n)
        if done >= total:
            bar.close()

    return report


def quiet_transformers_bars() -> None:
    """transformers draws bars of its own (loading weights, writing shards); hide them wherever ours
    are hidden, so a turn's output and CI logs stay readable. Never turns them on. Called before a model
    is loaded or saved, it also keeps DeepSpeed's CPU notice out (`deepspeed_accelerator_from_torch`)."""
    from flywheel.gpu import deepspeed_accelerator_from_torch

    deepspeed_accelerator_from_torch()
    if not progress_enabled():
        from transformers.utils import logging as hf_logging  # heavy: callers have loaded it already

        hf_logging.disable_progress_bar()


def show_progress_lines(stream: Any = None) -> None:
    """Print progress lines on `stream` (default stdout) as they are logged: the console view of a run
    that also records them elsewhere (`flywheel turn`: the Dagster event log). One console handler at a
    time: a second call with another stream replaces the first."""
    target = stream or sys.stdout
    log = logging.getLogger(LOGGER)
    log.setLevel(logging.INFO)
    for h in [h for h in log.handlers if getattr(h, "_flywheel_console", False)]:
        if getattr(h, "stream", None) is target:
            return
        log.removeHandler(h)
    handler = logging.StreamHandler(target)
    handler.setFormatter(logging.Formatter("  %(message)s"))
    handler._flywheel_console = True  # type: ignore[attr-defined]
    log.addHandler(handler)
