"""CLI flags generated from a library dataclass parse back into it."""

from __future__ import annotations

from flywheel.cli import build_parser
from flywheel.config_fields import from_args
from flywheel.train.config import GRPOConfig


def test_train_flags_build_the_library_config():
    args = build_parser().parse_args(["train", "--domain-weights", "math=1,code=0.5", "--no-dynamic-sampling",
                                      "--adam-betas", "0.9", "0.95", "--steps", "7"])
    cfg = from_args(GRPOConfig, args)
    assert cfg.domain_weights == {"math": 1.0, "code": 0.5} and cfg.adam_betas == (0.9, 0.95)
    assert cfg.steps == 7 and not cfg.dynamic_sampling and cfg.lr == GRPOConfig().lr
