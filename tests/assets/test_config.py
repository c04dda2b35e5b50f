"""The Dagster configs generated from the library dataclasses show the CLI's defaults and help, and build the same library config."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from flywheel.cli import build_parser
from flywheel.config_fields import from_args
from flywheel.evaluation.suites import EvalConfig
from flywheel.train.config import GRPOConfig
from flywheel_dagster.assets.evaluation import EvalReportConfig
from flywheel_dagster.assets.training import PLACEMENT, RlvrConfig


def _flags(command: str) -> dict[str, argparse.Action]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    out: dict[str, argparse.Action] = {}
    for a in sub.choices[command]._actions:  # a field's own flag, not a shorthand with the same dest (--tasks)
        out.setdefault(a.dest, a)
    return out


def _range(spec) -> str:
    """The launchpad's description ends with the field's bounds (declared once, on the library field): its range,
    and for a fixed-length tuple how many values it takes."""
    notes = [spec.range.describe()] if spec.range is not None else []
    if spec.kind is tuple and not spec.variadic:
        notes.append(f"exactly {len(spec.default)} values")
    return f" ({'; '.join(notes)})" if notes else ""


@pytest.mark.parametrize(("command", "config", "lib", "left_out"), [
    ("train", RlvrConfig, GRPOConfig, set(PLACEMENT)), ("evaluate", EvalReportConfig, EvalConfig, set())])
def test_cli_and_dagster_config_show_the_same_defaults_and_help(command, config, lib, left_out):
    flags, dagster = _flags(command), config.model_fields
    names = {f.name for f in dataclasses.fields(lib)}
    assert names <= set(flags)  # every library field is a flag
    assert names - {s.name for s in config.lib_specs} == left_out  # and a Dagster field, but where it runs
    for spec in config.lib_specs:
        flag = flags[spec.name]
        help_text = flag.help % {}  # argparse help is a %-template
        assert help_text == spec.help and flag.default == spec.default, spec.name
        prefix = config.spread_fields.get(spec.name)
        if prefix is not None:  # one launchpad field per key, e.g. tasks_math
            assert {k: dagster[prefix + k].default for k in spec.default} == flag.default
            assert all(dagster[prefix + k].description == f"{help_text}: {k}{_range(spec)}" for k in spec.default)
            continue
        field = dagster[spec.name]
        assert field.description == help_text + _range(spec), spec.name
        assert (tuple(field.default) if spec.kind is tuple else field.default) == flag.default, spec.name
    # and both build the same library config
    assert config().to_lib() == from_args(lib, build_parser().parse_args([command, "x"] if command == "evaluate"
                                                                          else [command]))


def test_the_rft_stage_config_is_the_same_in_the_cli_and_dagster():
    from flywheel.train.rft.config import RFT_PREFIX, RFT_RUN_FIELDS, RftConfig

    flags, dagster = _flags("train"), RlvrConfig.model_fields
    lib, specs = RlvrConfig.nested_specs[RFT_PREFIX]
    assert lib is RftConfig
    assert {s.name for s in specs} == {f.name for f in dataclasses.fields(RftConfig)} - set(RFT_RUN_FIELDS)
    for spec in specs:
        flag, field = flags[RFT_PREFIX + spec.name], dagster[RFT_PREFIX + spec.name]
        assert flag.help % {} == spec.help and field.description == spec.help + _range(spec), spec.name
        assert flag.default == spec.default == field.default, spec.name
    assert RlvrConfig(rft_steps=7).nested_lib(RFT_PREFIX) == RftConfig(steps=7)
    assert from_args(RftConfig, build_parser().parse_args(["train", "--rft-steps", "7"]), prefix=RFT_PREFIX) == \
        RftConfig(steps=7)


def test_the_launchpad_config_refuses_a_fixed_tuple_of_another_length_and_takes_any_variadic_one():
    """adam_betas is (beta1, beta2): the generated config refuses 1 or 3 values itself, so a launchpad run fails
    at config time as `--set` does; eval_report.suites is a tuple[str, ...] and takes any number."""
    import pydantic

    assert tuple(RlvrConfig(adam_betas=[0.8, 0.9]).to_lib().adam_betas) == (0.8, 0.9)
    for wrong in ([0.9], [0.9, 0.99, 0.5]):
        with pytest.raises(pydantic.ValidationError, match="adam_betas"):
            RlvrConfig(adam_betas=wrong)
    assert "exactly 2 values" in RlvrConfig.model_fields["adam_betas"].description
    variadic = [s for s in EvalReportConfig.lib_specs if s.kind is tuple and s.variadic]
    assert variadic, "EvalConfig has a variadic tuple field (suites)"
    for spec in variadic:
        EvalReportConfig(**{spec.name: list(spec.default)[:1]})
