"""Config declared once: a frozen dataclass whose fields carry `help` (and `choices`) metadata.

The library dataclass is the single source of every default and help text (TRL's
`HfArgumentParser` idea, without the dependency). From it this module generates the
command-line flags (`add_flags` / `from_args`); `assets/config.py` generates the Dagster
`Config` from the same `field_specs`, so the CLI and the Dagster launchpad can not drift.

    @dataclass(frozen=True)
    class MyConfig:
        lr: float = option(2e-4, "AdamW learning rate.")
        schedule: str = option("cosine", "LR schedule: constant | cosine.", choices=("constant", "cosine"))

        def __post_init__(self) -> None:
            check_choices(self)
"""

from __future__ import annotations

import argparse
import dataclasses
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any


def option(default: Any, help: str, *, choices: Iterable[Any] | None = None) -> Any:  # noqa: A002 - TRL's name
    """A dataclass field with its help text (and the values it may take, checked by `check_choices`)."""
    meta: dict[str, Any] = {"help": help}
    if choices is not None:
        meta["choices"] = tuple(choices)
    if isinstance(default, (dict, list)):
        return dataclasses.field(default_factory=lambda d=default: type(d)(d), metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def check_choices(obj: Any) -> None:
    """Raise ValueError, naming the valid values, for any field outside its declared `choices`."""
    for f in dataclasses.fields(obj):
        allowed = f.metadata.get("choices")
        value = getattr(obj, f.name)
        if allowed is not None and value not in allowed:
            raise ValueError(f"unknown {f.name} {value!r}; valid: {', '.join(map(str, allowed))}")


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
        out.append(FieldSpec(f.name, kind, default, f.metadata.get("help", ""), f.metadata.get("choices"), item))
    return out


def _mapping_parser(item: type) -> Any:
    def parse(text: str) -> dict[str, Any]:
        out = {}
        for part in filter(None, (p.strip() for p in text.split(","))):
            key, sep, value = part.partition("=")
            if not sep or not key.strip():
                raise argparse.ArgumentTypeError(f"{part!r} is not KEY=VALUE")
            try:
                out[key.strip()] = item(value)
            except ValueError as e:
                raise argparse.ArgumentTypeError(f"{part!r}: {e}") from e
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
            kw.update(type=_mapping_parser(spec.item or str), metavar="KEY=VALUE,...")
        elif spec.kind is tuple:
            kw.update(type=spec.item, nargs=len(spec.default), metavar=(spec.item or str).__name__.upper())
        else:
            kw["type"] = spec.kind
            if spec.choices is not None:
                kw["choices"] = spec.choices
        action = parser.add_argument("--" + (prefix + spec.name).replace("_", "-"), **kw)
        action.shown_default = _fmt_default(replace(spec, default=default))  # type: ignore[attr-defined]
    return specs


def from_args(cls: type, args: argparse.Namespace, prefix: str = "", **overrides: Any) -> Any:
    """`cls` built from the parsed flags `add_flags` made (fields without a flag keep their default)."""
    kw: dict[str, Any] = {}
    for spec in field_specs(cls):
        if hasattr(args, prefix + spec.name):
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
