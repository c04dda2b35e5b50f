"""CLI flags generated from a library dataclass parse back into it."""

from __future__ import annotations

import re

from flywheel.cli import build_parser
from flywheel.config_fields import from_args
from flywheel.train.config import GRPOConfig


def test_train_flags_build_the_library_config():
    args = build_parser().parse_args(["train", "--domain-weights", "math=1,code=0.5", "--no-dynamic-sampling",
                                      "--adam-betas", "0.9", "0.95", "--steps", "7"])
    cfg = from_args(GRPOConfig, args)
    assert cfg.domain_weights == {"math": 1.0, "code": 0.5} and cfg.adam_betas == (0.9, 0.95)
    assert cfg.steps == 7 and not cfg.dynamic_sampling and cfg.lr == GRPOConfig().lr


def test_a_declared_range_is_enforced_by_the_dataclass_and_the_flag():
    """The range lives on the field: the dataclass refuses a value out of it (and NaN anywhere), and the
    generated flag is a usage error naming the flag."""
    import argparse
    import math
    from dataclasses import dataclass

    import pytest

    from flywheel.config_fields import add_flags, check_choices, option

    @dataclass(frozen=True)
    class Cfg:
        lr: float = option(1e-3, "learning rate", gt=0)
        steps: int = option(10, "steps", ge=0, le=100)
        weights: dict[str, float] = option({"a": 1.0}, "weights", ge=0)
        free: float = option(0.5, "no range, but finite")

        def __post_init__(self) -> None:
            check_choices(self)

    assert Cfg(lr=0.1, steps=100).steps == 100
    for bad, why in [({"lr": 0.0}, "lr: expected a number > 0, got 0.0"), ({"steps": -5}, "steps: expected an integer >= 0 and <= 100"),
                     ({"steps": 101}, "<= 100, got 101"), ({"lr": math.nan}, "lr: expected a finite number, got nan"),
                     ({"weights": {"a": -1.0}}, "weights['a']: expected a number >= 0"),
                     ({"free": math.inf}, "free: expected a finite number, got inf")]:
        with pytest.raises(ValueError, match=re.escape(why)):
            Cfg(**bad)
    p = argparse.ArgumentParser(exit_on_error=False)
    add_flags(p, Cfg)
    assert p.parse_args(["--steps", "7"]).steps == 7
    for argv in (["--steps", "-5"], ["--lr", "nan"], ["--lr", "0"], ["--weights", "a=-2"], ["--free", "inf"]):
        with pytest.raises(argparse.ArgumentError):
            p.parse_args(argv)


def test_the_dagster_config_carries_the_range():
    from dataclasses import dataclass

    import pydantic
    import pytest

    from flywheel.config_fields import check_choices, option
    from flywheel_dagster.assets.config import config_class

    @dataclass(frozen=True)
    class Cfg:
        steps: int = option(10, "steps", ge=0)

        def __post_init__(self) -> None:
            check_choices(self)

    cls = config_class(Cfg, "CfgConfig", "test")
    assert cls(steps=3).to_lib().steps == 3
    with pytest.raises(pydantic.ValidationError):
        cls(steps=-1)
    assert "(>= 0)" in cls.model_fields["steps"].description
