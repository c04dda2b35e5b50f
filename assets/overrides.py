"""`flywheel turn --set ASSET.FIELD=VALUE`: every override checked before the turn writes anything.

Names against the turn's jobs' run-config schemas (and the resources' fields), types through Dagster's own
validation, and values by building the asset's config (pydantic ranges, then the library dataclass: choices,
ranges, finiteness, cross-field rules) or the resource with the override laid over its configured fields.
Each problem is one line naming the field and what is valid.
"""

from __future__ import annotations

import re
import typing
from typing import Any

import dagster as dg
import pydantic

from flywheel.train.config import TrainConfig, ignored_by_stage
from flywheel_dagster.assets.config import LibConfig
from flywheel_dagster.assets.orchestration import BASE_MODEL_ASSETS, DAILY_ASSETS


def parse_override(text: str) -> tuple[str, str, Any]:
    """`asset.field=value` (value as JSON when it parses, else a string) -> (asset, field, value)."""
    import json

    key, sep, raw = text.partition("=")
    asset, dot, name = key.partition(".")
    if not sep or not dot or not asset or not name:
        raise ValueError(f"override {text!r} must look like asset.field=value, e.g. rlvr_policy.rft_steps=10")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return asset, name, value


class TurnConfigError(ValueError):
    """An `--set` override that neither of the turn's jobs accepts; raised before the turn writes anything."""


TURN_JOBS: dict[str, tuple[str, ...]] = {"daily_logs_job": DAILY_ASSETS, "base_model_job": BASE_MODEL_ASSETS}
"""The jobs a turn runs, in order, and the assets whose config `--set` may override in each."""


def _type_name(config_type: Any) -> str:
    """`Noneable.Map.String.IntSourceType` -> `mapping of String to Int`: what a user types, not Dagster's key."""
    key = str(getattr(config_type, "key", config_type)).removeprefix("Noneable.").replace("SourceType", "")
    if key.startswith("Array."):
        return f"list of {key.removeprefix('Array.')}"
    if key.startswith("Map."):
        k, _, v = key.removeprefix("Map.").partition(".")
        return f"mapping of {k} to {v}"
    return key


def _config_fields(defs: dg.Definitions) -> dict[str, tuple[dg.JobDefinition, dict[str, Any]]]:
    """asset -> (the job that runs it, its config fields by name) for every asset a turn materializes."""
    out: dict[str, tuple[dg.JobDefinition, dict[str, Any]]] = {}
    for job_name, assets in TURN_JOBS.items():
        job = defs.resolve_job_def(job_name)
        for asset in assets:
            schema = job.graph.node_named(asset).definition.config_schema
            fields = getattr(schema.config_type, "fields", None) if schema is not None else None
            out[asset] = (job, dict(fields or {}))
    return out


def _job_resources(job: dg.JobDefinition) -> set[str]:
    """The resource keys in `job`'s run-config schema (those its assets require)."""
    field = job.run_config_schema.config_type.fields.get("resources")  # type: ignore[union-attr]
    return set(getattr(field.config_type, "fields", {}) or {}) if field is not None else set()


def _resource_value(value: Any) -> Any:
    """A configured resource field as run config (an `EnvVar` stays a reference to its variable)."""
    return {"env": value.env_var_name} if isinstance(value, dg.EnvVar) else value


def resource_config(job: dg.JobDefinition, overrides: dict[str, dict[str, Any]],
                    defs: dg.Definitions) -> dict[str, Any]:
    """Run config for the resources `--set RESOURCE.FIELD=VALUE` overrides that `job` uses: the resource's
    configured fields with the overrides on top (Dagster replaces a resource's whole config, so the rest is kept)."""
    out: dict[str, Any] = {}
    for key in _job_resources(job) & set(overrides) & set(defs.resources):
        res = defs.resources[key]
        kept = {k: _resource_value(v) for k, v in res._get_non_default_public_field_values().items()}
        out[key] = {"config": {**kept, **overrides[key]}}
    return out


def _check_resource_override(key: str, values: dict[str, Any], defs: dg.Definitions) -> None:
    res = defs.resources[key]
    fields = sorted(getattr(type(res), "model_fields", {}))
    for name in values:
        if name not in fields:
            raise TurnConfigError(f"--set {key}.{name}: resource {key!r} has no field {name!r}; its fields: "
                                  + ", ".join(fields))
    jobs = [defs.resolve_job_def(j) for j in TURN_JOBS if key in _job_resources(defs.resolve_job_def(j))]
    if not jobs:
        raise TurnConfigError(f"--set {key}.…: no asset of a turn uses resource {key!r}")
    for name, value in values.items():
        try:
            dg.validate_run_config(jobs[0], {"resources": resource_config(jobs[0], {key: {name: value}}, defs)})
        except dg.DagsterInvalidConfigError as e:
            expected = re.search(r'expected type "([^"]+)"', str(e))
            why = f"expected {_type_name(expected.group(1))}" if expected else str(e).splitlines()[-1].strip()
            raise TurnConfigError(f"--set {key}.{name}: {why}, got {value!r}") from None


def check_overrides(overrides: dict[str, dict[str, Any]], defs: dg.Definitions) -> None:
    """Every `asset -> {field: value}` override against the turn's jobs' run-config schemas (the assets' Config
    classes), and every `resource -> {field: value}` against the resource's fields, with one-line errors naming
    what is valid; raises TurnConfigError before anything is written."""
    schemas = _config_fields(defs)
    configurable = [a for a, (_, fields) in schemas.items() if fields]
    for asset, values in overrides.items():
        if asset not in schemas and asset in defs.resources:
            _check_resource_override(asset, values, defs)
            check_resource_values(asset, values, defs)
            continue
        if asset not in schemas or not schemas[asset][1]:
            raise TurnConfigError(f"--set {asset}.…: no asset {asset!r} with config in a turn; "
                                  f"assets with config: {', '.join(configurable)}")
        job, fields = schemas[asset]
        for name, value in values.items():
            if name not in fields:
                raise TurnConfigError(f"--set {asset}.{name}: {asset} has no config field {name!r}; "
                                      f"its fields: {', '.join(sorted(fields))}")
            try:
                dg.validate_run_config(job, {"ops": {asset: {"config": {name: value}}}})
            except dg.DagsterInvalidConfigError:
                expected = _type_name(fields[name].config_type)
                hint = " (a number or true/false is read as JSON: quote it, e.g. '\"1\"')" if expected == "String" else ""
                raise TurnConfigError(f"--set {asset}.{name}: expected {expected}, got {value!r}{hint}") from None
        check_values(asset, values, job)


def _one_line(e: Exception) -> str:
    """A pydantic or dataclass validation error as one line: the field, what is wrong, the value given."""
    if isinstance(e, pydantic.ValidationError):
        err = e.errors()[0]
        where = ".".join(str(x) for x in err.get("loc", ()))
        if err.get("type") in ("too_short", "too_long") and "actual_length" in err.get("ctx", {}):
            n = err["ctx"].get("max_length", err["ctx"].get("min_length"))
            return f"{where}: expected {n} values, got {err['ctx']['actual_length']}: {err.get('input')!r}"
        return f"{where + ': ' if where else ''}{err.get('msg', 'invalid')}, got {err.get('input')!r}"
    return str(e).splitlines()[0] if str(e) else type(e).__name__


def _refused(owner: str, values: dict[str, Any], e: Exception) -> TurnConfigError:
    """One line naming the override at fault (the first one the error names; all of them otherwise)."""
    why = _one_line(e)
    named = [k for k in values if re.search(rf"\b{re.escape(k)}\b", why)]
    return TurnConfigError(f"--set {', '.join(f'{owner}.{k}' for k in (named[:1] or values))}: {why}")


def asset_config_class(job: dg.JobDefinition, asset: str) -> type[dg.Config] | None:
    """The `dg.Config` class the asset's function takes as `config` (None for an asset without one)."""
    fn = getattr(job.graph.node_named(asset).definition.compute_fn, "decorated_fn", None)
    if fn is None:
        return None
    try:
        hint = typing.get_type_hints(fn).get("config")
    except Exception:  # an unresolvable annotation elsewhere in the signature: no value check here
        return None
    return hint if isinstance(hint, type) and issubclass(hint, dg.Config) else None


def check_values(asset: str, values: dict[str, Any], job: dg.JobDefinition) -> None:
    """Build `asset`'s config with `values` (and, for a generated config, its library dataclass and any nested
    one): a value out of range, not among the choices, or breaking a cross-field rule fails here, in one line."""
    cls = asset_config_class(job, asset)
    if cls is None:
        return
    try:
        cfg = cls(**values)
        if isinstance(cfg, LibConfig):
            lib = LibConfig.to_lib(cfg)
            for prefix in cfg.nested_specs:
                cfg.nested_lib(prefix)
    except (pydantic.ValidationError, ValueError, TypeError) as e:
        raise _refused(asset, values, e) from None
    if isinstance(cfg, LibConfig) and isinstance(lib, TrainConfig):
        _check_stage(asset, lib.stage, values)


def _check_stage(asset: str, stage: str, values: dict[str, Any]) -> None:
    """A training setting the chosen stage never reads is refused: it would silently do nothing."""
    from flywheel.train.rft.config import RFT_PREFIX, RftConfig

    ignored = ignored_by_stage(stage, list(values), RFT_PREFIX)
    if not ignored:
        return
    name = ignored[0]
    if stage == "rl":
        raise TurnConfigError(f"--set {asset}.{name}: an RFT setting, which stage rl never reads; RFT runs with "
                              f"{asset}.stage=rft (the default) or rft_rl")
    own = f"RFT's own is {asset}.{RFT_PREFIX}{name}; " if name in RftConfig.__dataclass_fields__ else ""
    raise TurnConfigError(f"--set {asset}.{name}: a GRPO setting, which stage rft (the default) never reads; "
                          f"{own}GRPO runs with {asset}.stage=rl or rft_rl")


def check_resource_values(key: str, values: dict[str, Any], defs: dg.Definitions) -> None:
    """The resource rebuilt with the overrides over its configured fields: pydantic checks each value."""
    res = defs.resources[key]
    kept = res._get_non_default_public_field_values()
    try:
        type(res)(**{**kept, **values})
    except (pydantic.ValidationError, ValueError, TypeError) as e:
        raise _refused(key, values, e) from None
