"""Argument types that check numbers where argparse reads them, so a bad value is a usage error (exit 2)
naming the flag, before any work starts."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from flywheel.config_fields import Range
from flywheel.config_fields import bounded as field_bounded


def bounded(kind: type, lo: float | None = None, hi: float | None = None, *, above: bool = False) -> Callable[[str], Any]:
    """An argparse type reading `kind` (int or float) in [lo, hi] (`above`: strictly more than `lo`): the
    config fields' reader (`flywheel.config_fields.bounded`) for a flag that is not a config field."""
    return field_bounded(kind, Range(low=lo, high=hi, strict_low=above))


count = bounded(int, 0)
"""A count that may be zero."""
positive_int = bounded(int, 1)
non_negative = bounded(float, 0.0)
positive = bounded(float, 0.0, above=True)
fraction = bounded(float, 0.0, 1.0)
"""A rate or share in [0, 1]."""


def domain_counts(text: str) -> dict[str, int]:
    """`math:5,code:3` (or `math=5,code=3`) -> {"math": 5, "code": 3}; each count an integer >= 0."""
    out: dict[str, int] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        sep = ":" if ":" in part else "="
        key, found, value = part.partition(sep)
        if not found or not key.strip():
            raise argparse.ArgumentTypeError(f"{part!r} is not DOMAIN:COUNT (e.g. math:5,code:3)")
        if key.strip() in out:
            raise argparse.ArgumentTypeError(f"domain {key.strip()!r} is given twice")
        try:
            out[key.strip()] = count(value.strip())
        except argparse.ArgumentTypeError as e:
            raise argparse.ArgumentTypeError(f"{part!r}: {e}") from None
    if not out:
        raise argparse.ArgumentTypeError(f"expected DOMAIN:COUNT pairs (e.g. math:5,code:3), got {text!r}")
    return out


domain_counts.__name__ = "DOMAIN:COUNT"
