"""Config declared once: a frozen dataclass whose fields carry `help` (and `choices`, and a range) metadata.

The library dataclass is the single source of every default and help text (TRL's
`HfArgumentParser` idea, without the dependency). From it this module generates the
command-line flags (`add_flags` / `from_args`); `assets/config.py` generates the Dagster
`Config` from the same `field_specs`, so the CLI and the Dagster launchpad can not drift.

    @dataclass(frozen=True)
    class MyConfig:
        lr: float = option(2e-4, "AdamW learning rate.", gt=0)
        steps: int = option(100, "optimizer steps", ge=0)
        schedule: str = option("cosine", "LR schedule: constant | cosine.", choices=("constant", "cosine"))

        def __post_init__(self) -> None:
            check_choices(self)  # choices, ranges, and no NaN/infinity in any number

A range is declared once, on the field: the CLI's flags read through `bounded` (exit 2 naming the flag),
the Dagster config's fields carry it as pydantic constraints, and the dataclass refuses it at construction
(so `flywheel turn --set` is checked before anything runs).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any


def option(default: Any, help: str, *, choices: Iterable[Any] | None = None,  # noqa: A002 - TRL's name
           ge: float | None = None, gt: float | None = None, le: float | None = None) -> Any:
    """A dataclass field with its help text, the values it may take (`choices`) and its range (`ge`/`gt` its
    low end, inclusive or strict; `le` its high end; for a dict field, every value's), all checked by
    `check_choices` and carried into the CLI flags and the Dagster config."""
    meta: dict[str, Any] = {"help": help}
    if choices is not None:
        meta["choices"] = tuple(choices)
    if ge is not None and gt is not None:
        raise TypeError("give a field's low end as ge= or gt=, not both")
    if ge is not None or gt is not None or le is not None:
        meta["range"] = Range(low=gt if gt is not None else ge, high=le, strict_low=gt is not None)
    if isinstance(default, (dict, list)):
        return dataclasses.field(default_factory=lambda d=default: type(d)(d), metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


@dataclass(frozen=True)
class Range:
    """The values a number may take: `low` (strictly above it when `strict_low`) up to `high` inclusive."""

    low: float | None = None
    high: float | None = None
    strict_low: bool = False

    def describe(self) -> str:
        low = f"{'>' if self.strict_low else '>='} {self.low}" if self.low is not None else ""
        high = f"<= {self.high}" if self.high is not None else ""
        return " and ".join(filter(None, [low, high]))

    def problem(self, value: Any, what: str | None = None, shown: Any = None) -> str | None:
        """Why `value` is outside the range (or not a finite number), or None when it fits. `what` names the
        kind of value expected ("an integer"); `shown` is how to show the value given (the text typed)."""
        shown = value if shown is None else shown
        what = what or ("an integer" if isinstance(value, int) and not isinstance(value, bool) else "a number")
        expected = " ".join(filter(None, [what, self.describe()]))
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"expected {expected}, got {shown!r}"
        if isinstance(value, float) and not math.isfinite(value):
            return f"expected a finite number, got {shown!r}"
        low_bad = self.low is not None and (value <= self.low if self.strict_low else value < self.low)
        if low_bad or (self.high is not None and value > self.high):
            return f"expected {expected}, got {shown!r}"
        return None


def _values(value: Any) -> list[tuple[str, Any]]:
    if isinstance(value, Mapping):
        return [(f"[{k!r}]", v) for k, v in value.items()]
    if isinstance(value, (tuple, list)):
        return [(f"[{i}]", v) for i, v in enumerate(value)]
    return [("", value)]


def check_choices(obj: Any) -> None:
    """Raise ValueError, naming the field and what is valid, for any field outside its declared `choices` or
    range, and for any NaN or infinite number (a dict's or tuple's values included)."""
    for f in dataclasses.fields(obj):
        allowed = f.metadata.get("choices")
        value = getattr(obj, f.name)
        items = value if isinstance(value, (tuple, list)) else (value,)  # a tuple field: each of its items
        if allowed is not None and any(v not in allowed for v in items):
            raise ValueError(f"unknown {f.name} {value!r}; valid: {', '.join(map(str, allowed))}")
        rng: Range | None = f.metadata.get("range")
        for where, v in _values(value):
            if rng is not None:
                why = rng.problem(v)
            elif isinstance(v, float) and not math.isfinite(v):
                why = f"expected a finite number, got {v!r}"
            else:
                why = None
            if why:
                raise ValueError(f"{f.name}{where}: {why}")


validate_fields = check_choices
"""The same check under the name that says all it does (choices, ranges, finiteness)."""


@dataclass(frozen=True)
class FieldSpec:
    """One config field as both generators see it.

    `kind` is the container (`dict`, `tuple`) or the scalar type (`int`, `float`, `str`, `bool`);
    `item` is the value type of a dict or the item type of a tuple, else None.
    """

    name: str
    kind: type
    default: Any
    help: str
    choices: tuple[Any, ...] | None = None
    item: type | None = None
    range: Range | None = None
    variadic: bool = False
    """A `tuple[X, ...]` field: any number of items (a fixed tuple takes as many as its default)."""

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


def _kind(tp: Any) -> tuple[type, type | None]:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (dict, Mapping) or (origin is not None and isinstance(origin, type) and issubclass(origin, Mapping)):
        return dict, args[1]
    if origin is tuple:
        return tuple, args[0]
    if isinstance(tp, type) and tp in (int, float, str, bool):
        return tp, None
    raise TypeError(f"config field type {tp!r} has no generated flag (use int, float, str, bool, dict, tuple)")


def field_specs(cls: type, exclude: Iterable[str] = ()) -> list[FieldSpec]:
    """The fields of dataclass `cls` (minus `exclude`), in declaration order."""
    hints = typing.get_type_hints(cls)
    skip = set(exclude)
    out = []
    for f in dataclasses.fields(cls):
        if f.name in skip:
            continue
        kind, item = _kind(hints[f.name])
        default = f.default_factory() if f.default is dataclasses.MISSING else f.default  # type: ignore[misc]
        if kind is dict:
            default = dict(default)
        variadic = kind is tuple and Ellipsis in typing.get_args(hints[f.name])
        out.append(FieldSpec(f.name, kind, default, f.metadata.get("help", ""), f.metadata.get("choices"), item,
                             f.metadata.get("range"), variadic))
    return out


def bounded(kind: type, rng: Range | None = None) -> Any:
    """An argparse type reading `kind` (int or float), finite and within `rng`: a bad value is a usage error
    (exit 2) naming the flag, before any work starts."""
    what = "an integer" if kind is int else "a number"

    def parse(text: str) -> Any:
        try:
            x = kind(text)
        except ValueError:
            rest = f" {rng.describe()}" if rng and rng.describe() else ""
            raise argparse.ArgumentTypeError(f"expected {what}{rest}, got {text!r}") from None
        why = (rng or Range()).problem(x, what, text)
        if why:
            raise argparse.ArgumentTypeError(why)
        return x

    parse.__name__ = kind.__name__  # argparse names the type in its own messages
    return parse


def mapping_parser(item: type, rng: Range | None = None) -> Any:
    """An argparse type reading `KEY=VALUE,KEY=VALUE` into a dict of `item`, every number finite and in `rng`."""

    def parse(text: str) -> dict[str, Any]:
        out = {}
        for part in filter(None, (p.strip() for p in text.split(","))):
            key, sep, value = part.partition("=")
            if not sep or not key.strip():
                raise argparse.ArgumentTypeError(f"{part!r} is not KEY=VALUE")
            try:
                x = item(value)
            except ValueError as e:
                raise argparse.ArgumentTypeError(f"{part!r}: {e}") from e
            why = (rng or Range()).problem(x, "a number") if item in (int, float) else None
            if why:
                raise argparse.ArgumentTypeError(f"{key.strip()}={x}: {why}")
            out[key.strip()] = x
        return out

    parse.__name__ = f"KEY={item.__name__}"  # argparse names the type in its error message
    return parse


def _fmt_default(spec: FieldSpec) -> str:
    if spec.kind is dict:
        return ",".join(f"{k}={v}" for k, v in spec.default.items())
    if spec.kind is tuple:
        return " ".join(map(str, spec.default))
    return str(spec.default)


def add_flags(parser: argparse.ArgumentParser, cls: type, *, exclude: Iterable[str] = (),
              defaults: Mapping[str, Any] | None = None, prefix: str = "") -> list[FieldSpec]:
    """One `--kebab-case` flag per field of `cls`: type, default, help and choices from the field.

    dict fields take `KEY=VALUE,KEY=VALUE`; tuple fields take as many values as their default;
    bool fields get `--name/--no-name`. `defaults` overrides a default for this parser only
    (a benchmark's own run length, say). `prefix` (e.g. `rft_`) names a second config's flags apart
    (`--rft-steps`, dest `rft_steps`). Returns the specs the flags were made from.
    """
    specs = field_specs(cls, exclude)
    for spec in specs:
        default = (defaults or {}).get(spec.name, spec.default)
        # argparse %-formats help strings; ours are plain text
        kw: dict[str, Any] = {"dest": prefix + spec.name, "default": default, "help": spec.help.replace("%", "%%")}
        if spec.kind is bool:
            kw["action"] = argparse.BooleanOptionalAction
        elif spec.kind is dict:
            kw.update(type=mapping_parser(spec.item or str, spec.range), metavar="KEY=VALUE,...")
        elif spec.kind is tuple:
            item = spec.item or str
            kw.update(type=bounded(item, spec.range) if item in (int, float) else item,
                      nargs="*" if spec.variadic else len(spec.default), metavar=item.__name__.upper())
            if spec.choices is not None:
                kw["choices"] = spec.choices
        elif spec.kind in (int, float):
            kw["type"] = bounded(spec.kind, spec.range)
        else:
            kw["type"] = spec.kind
            if spec.choices is not None:
                kw["choices"] = spec.choices
        action = parser.add_argument("--" + (prefix + spec.name).replace("_", "-"), **kw)
        action.shown_default = _fmt_default(replace(spec, default=default))  # type: ignore[attr-defined]
        action.field_spec = spec  # type: ignore[attr-defined]  # what the flag was made from
    return specs


def from_args(cls: type, args: argparse.Namespace, prefix: str = "", **overrides: Any) -> Any:
    """`cls` built from the parsed flags `add_flags` made (fields without a flag keep their default)."""
    kw: dict[str, Any] = {}
    flagged = [f.name for f in dataclasses.fields(cls) if hasattr(args, prefix + f.name) and f.name not in overrides]
    for spec in field_specs(cls, exclude=[f.name for f in dataclasses.fields(cls) if f.name not in flagged]):
        value = getattr(args, prefix + spec.name)
        kw[spec.name] = tuple(value) if spec.kind is tuple else value
    kw.update(overrides)
    return cls(**kw)


class ConfigHelpFormatter(argparse.HelpFormatter):
    """`--help` shows each generated flag's default the way the flag spells it (`math=0.9,code=0.05`)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        shown = getattr(action, "shown_default", None)
        if shown is None:
            return action.help
        return f"{action.help} (default: {shown.replace('%', '%%')})"
