"""Argument types that check numbers where argparse reads them, so a bad value is a usage error (exit 2)
naming the flag, before any work starts."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Mapping
from typing import Any

from flywheel.config_fields import Range, mapping_parser
from flywheel.config_fields import bounded as field_bounded


def bounded(kind: type, lo: float | None = None, hi: float | None = None, *, above: bool = False) -> Callable[[str], Any]:
    """An argparse type reading `kind` (int or float) in [lo, hi] (`above`: strictly more than `lo`)."""
    what = "an integer" if kind is int else "a number"
    rng = " ".join(filter(None, [f"{'>' if above else '>='} {lo}" if lo is not None else "",
                                 "and" if lo is not None and hi is not None else "",
                                 f"<= {hi}" if hi is not None else ""]))

    def parse(text: str) -> Any:
        try:
            x = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}{' ' + rng if rng else ''}, got {text!r}") from None
        if isinstance(x, float) and not math.isfinite(x):
            raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
        if (lo is not None and (x <= lo if above else x < lo)) or (hi is not None and x > hi):
            raise argparse.ArgumentTypeError(f"expected {what} {rng}, got {text!r}")
        return x

    parse.__name__ = kind.__name__  # argparse names the type in its own messages
    return parse


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


def constrain(parser: argparse.ArgumentParser, bounds: Mapping[str, tuple[float | None, float | None]],
              *, strict_low: frozenset[str] = frozenset()) -> None:
    """Give the generated flags (config_fields.add_flags) of `parser` the ranges in `bounds` (dest -> (lo, hi)),
    for config fields that do not declare their range themselves yet (`option(..., ge=...)` is the way).

    Scalar int/float flags read through `bounded`; KEY=VALUE flags check every value. `strict_low` names
    the dests whose value must be strictly above `lo`.
    """
    actions = {a.dest: a for a in parser._actions}
    for dest, (lo, hi) in bounds.items():
        action = actions[dest]  # a KeyError here is a typo in a command's bounds table
        spec = getattr(action, "field_spec", None)
        rng = Range(low=lo, high=hi, strict_low=dest in strict_low)
        if spec is not None and spec.range is not None:
            continue  # the field declares its own range: that one is the truth
        if spec is not None and spec.kind in (int, float):
            action.type = field_bounded(spec.kind, rng)
        elif spec is not None and spec.kind is dict and spec.item in (int, float):
            action.type = mapping_parser(spec.item, rng)
        else:
            raise TypeError(f"{dest}: no numeric range for a flag of type {action.type!r}")
