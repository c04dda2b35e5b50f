"""TrainConfig: frozen, every field documented, validated at construction; its defaults are the measured recipe."""

from __future__ import annotations

import dataclasses

import pytest

from flywheel.train.config import TrainConfig
from flywheel.train.grpo import loss as grpo


def test_config_is_frozen_documented_and_validated():
    cfg = TrainConfig()
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.lr = 1.0  # type: ignore[misc]
    assert all(TrainConfig.help().values())
    assert cfg.replace(domain_weights={"math": 1.0}).to_params()["cfg.domain_weights"] == '{"math": 1.0}'
    assert TrainConfig.from_dict(cfg.replace(lr=1e-3).to_dict()).lr == 1e-3
    with pytest.raises(ValueError):
        TrainConfig(group_size=1)
    with pytest.raises(ValueError):
        TrainConfig(backend="jax")


def test_unknown_advantage_fails_at_construction_naming_the_valid_ones():
    with pytest.raises(ValueError, match="grpo, dr_grpo"):
        TrainConfig(advantage="ppo")
    # the names the config accepts are exactly the registered estimators
    assert set(TrainConfig.__dataclass_fields__["advantage"].metadata["choices"]) == set(grpo.ADVANTAGE_ESTIMATORS)


def test_defaults_are_the_measured_tiny_model_recipe():
    cfg = TrainConfig()
    assert (cfg.steps, cfg.lr, cfg.lr_schedule, cfg.advantage) == (120, 2e-4, "cosine", "dr_grpo")
    assert (cfg.max_refill_rounds, cfg.micro_batch_size, cfg.max_new_tokens) == (1, 32, 80)
    assert cfg.domain_weights == {"math": 0.8, "code": 0.1, "agent": 0.1}


def test_rft_task_counts_take_globs_and_families_with_explicit_domains_winning():
    from flywheel.train.rft.config import RftConfig

    c = RftConfig(tasks_per_domain={"math": 10, "rg.gcd": 5, "rg.*": 2})
    assert c.tasks_per_domain["math"] == 10 and c.tasks_per_domain["rg.gcd"] == 5
    assert c.tasks_per_domain["rg.lcm"] == 2 and "rg.*" not in c.tasks_per_domain
    with pytest.raises(ValueError, match="matches no installed domain"):
        RftConfig(tasks_per_domain={"nope.*": 3})


def test_the_old_name_still_builds_the_run_config():
    """`GRPOConfig` was renamed `TrainConfig` (its default stage is RFT); users' code keeps working."""
    from flywheel.train.config import GRPOConfig

    assert GRPOConfig(stage="rl", steps=3) == TrainConfig(stage="rl", steps=3)


@pytest.mark.parametrize(("config", "field", "value", "says"), [
    ("rft", "steps", 0, "steps: expected an integer >= 1"),
    ("rft", "temperature", 0.0, "temperature: expected a number > 0"),
    ("rft", "replay_share", 1.5, "replay_share: expected a number >= 0 and <= 1"),
    ("train", "replay_share", -0.1, "replay_share: expected a number >= 0 and <= 1"),
    ("train", "temperature", 0.0, "temperature: expected a number > 0"),
])
def test_a_value_outside_its_field_range_is_refused_by_the_range_the_cli_and_dagster_read(config, field, value, says):
    """Each range is declared once, on its field: construction refuses the value in the range's words, and the
    field spec that the CLI flag and the Dagster config field are generated from refuses it too."""
    from flywheel.config_fields import field_specs
    from flywheel.train.rft.config import RftConfig

    cls = RftConfig if config == "rft" else TrainConfig
    with pytest.raises(ValueError, match=says.replace("[", r"\[")):
        cls(**{field: value})
    spec = next(s for s in field_specs(cls) if s.name == field)
    assert spec.range is not None and spec.range.problem(value) is not None
