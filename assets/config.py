"""Dagster run configs generated from the library's config dataclasses (`flywheel.config_fields`).

Each default and help text lives once, on the library dataclass; `config_class` turns it into a
`dg.Config` whose fields carry the same defaults and descriptions, and whose `to_lib()` returns
the frozen, validated dataclass. Resources say where a step runs, so placement fields are left
out (`exclude`); a dict the launchpad shows better as one number per key (`spread`) becomes
`<prefix><key>` fields.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

import dagster as dg
from pydantic import Field, create_model

from flywheel.config_fields import FieldSpec, field_specs


class LibConfig(dg.Config):
    """A Dagster config generated from a library dataclass; `to_lib()` builds that dataclass."""

    lib_class: ClassVar[type]
    lib_specs: ClassVar[tuple[FieldSpec, ...]]
    spread_fields: ClassVar[dict[str, str]]
    nested_specs: ClassVar[dict[str, tuple[type, tuple[FieldSpec, ...]]]]

    def lib_values(self) -> dict[str, Any]:
        """The library fields this config holds, in the dataclass's types (tuples, dicts)."""
        out: dict[str, Any] = {}
        for spec in self.lib_specs:
            prefix = self.spread_fields.get(spec.name)
            if prefix is not None:
                out[spec.name] = {k: getattr(self, prefix + k) for k in spec.default}
            elif spec.kind is tuple:
                out[spec.name] = tuple(getattr(self, spec.name))
            elif spec.kind is dict:
                out[spec.name] = dict(getattr(self, spec.name))
            else:
                out[spec.name] = getattr(self, spec.name)
        return out

    def to_lib(self, **overrides: Any) -> Any:
        """The frozen library config (validated at construction); `overrides` win over this config."""
        return self.lib_class(**{**self.lib_values(), **overrides})

    def nested_lib(self, prefix: str, **overrides: Any) -> Any:
        """The second library config generated under `prefix` (`config_class(nested=...)`)."""
        cls, specs = self.nested_specs[prefix]
        values = {s.name: (tuple(v) if s.kind is tuple else v) for s in specs
                  for v in [getattr(self, prefix + s.name)]}
        return cls(**{**values, **overrides})


def _field(spec: FieldSpec, default: Any, description: str) -> Any:
    """A pydantic field with the dataclass field's default, help and its bounds: for a scalar number its range,
    for a fixed-length tuple (adam_betas) its length (pydantic refuses a value out of them when Dagster builds
    the config, and `--set` through the same class; the launchpad shows them in the help)."""
    rng = spec.range
    bounds: dict[str, Any] = {}
    notes: list[str] = []
    if rng is not None:
        if spec.kind in (int, float):
            if rng.low is not None:
                bounds["gt" if rng.strict_low else "ge"] = rng.low
            if rng.high is not None:
                bounds["le"] = rng.high
        if spec.kind is float:
            bounds["allow_inf_nan"] = False
        notes.append(rng.describe())
    if spec.kind is tuple and not spec.variadic:
        bounds["min_length"] = bounds["max_length"] = len(spec.default)
        notes.append(f"exactly {len(spec.default)} values")
    return Field(default=default, description=f"{description} ({'; '.join(notes)})" if notes else description,
                 **bounds)


def _annotation(spec: FieldSpec) -> Any:
    if spec.kind is dict:
        return dict[str, spec.item]  # type: ignore[name-defined]
    if spec.kind is tuple:
        return list[spec.item]  # type: ignore[name-defined]  # Dagster config has lists, not tuples
    return spec.kind


def config_class(lib: type, name: str, doc: str, *, exclude: Iterable[str] = (),
                 spread: Mapping[str, str] | None = None, module: str | None = None,
                 nested: Mapping[str, tuple[type, Iterable[str]]] | None = None) -> type[LibConfig]:
    """A `LibConfig` subclass named `name` with one field per field of dataclass `lib`.

    Default and description come from the dataclass field; `spread={"tasks_per_domain": "tasks_"}`
    gives a dict field one `tasks_<key>` field per key of its default. `nested={"rft_": (RftConfig,
    exclude)}` adds a second dataclass's fields under a prefix (`nested_lib("rft_")` builds it).
    Subclass the result to add run-only fields or to fold a resource's placement into `to_lib`.
    """
    spread = dict(spread or {})
    specs = tuple(field_specs(lib, exclude))
    fields: dict[str, Any] = {}
    for spec in specs:
        if spec.name in spread:
            for key, value in spec.default.items():
                item_spec = FieldSpec(key, spec.item or float, value, spec.help, range=spec.range)
                fields[spread[spec.name] + key] = (spec.item, _field(item_spec, value, f"{spec.help}: {key}"))
        else:
            default = list(spec.default) if spec.kind is tuple else spec.default
            fields[spec.name] = (_annotation(spec), _field(spec, default, spec.help))
    nested_specs: dict[str, tuple[type, tuple[FieldSpec, ...]]] = {}
    for prefix, (sub, sub_exclude) in (nested or {}).items():
        nested_specs[prefix] = (sub, tuple(field_specs(sub, sub_exclude)))
        for spec in nested_specs[prefix][1]:
            default = list(spec.default) if spec.kind is tuple else spec.default
            fields[prefix + spec.name] = (_annotation(spec), _field(spec, default, spec.help))
    cls = create_model(name, __base__=LibConfig, __doc__=doc, __module__=module or __name__, **fields)
    cls.lib_class, cls.lib_specs, cls.spread_fields, cls.nested_specs = lib, specs, spread, nested_specs
    return cls
