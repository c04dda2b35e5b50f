"""Alert thresholds, declared once: every check and the docs read their defaults and ranges from here."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from flywheel.config_fields import option


@dataclass(frozen=True)
class AlertThresholds:
    """When a watched signal becomes an alert. Rates are shares in [0, 1]; factors compare a day with the median
    of the days before it."""

    window: int = option(3, "Training steps (the last ones) a training signal is averaged over.")
    min_entropy: float = option(0.05, "Mean token entropy (nats) of the last steps below this: the policy "
                                      "collapsed onto a few tokens (ERROR, blocks evaluation).")
    min_reward_std: float = option(1e-3, "Reward std over the samples of the last steps below this: rewards are "
                                         "flat, GRPO has no signal to learn from (ERROR, blocks evaluation).")
    min_signal_share: float = option(0.2, "Share of sampled groups with a reward signal (not all-equal) below "
                                          "this: sampling mostly wastes its rollouts (WARN).")
    hacking_reward_rise: float = option(0.05, "Training reward rise (last steps minus first steps) that, with "
                                              "held-out pass@1 falling, reads as reward hacking.")
    hacking_heldout_drop: float = option(0.01, "Held-out pass@1 drop vs the champion that, with the training "
                                               "reward rising, reads as reward hacking (ERROR, blocks promotion).")
    max_verifier_infra_rate: float = option(0.02, "Share of verifier validations the judge could not answer "
                                                  "(sandbox or verifier infrastructure failed) above this (ERROR).")
    baseline_days: int = option(7, "Earlier days a spike is measured against (their median).")
    spike_factor: float = option(3.0, "A day's rate above this many times the baseline median is a spike.")
    min_quarantine_spike: float = option(0.02, "A quarantine rate at or below this is never a spike, "
                                               "whatever the baseline (WARN).")
    min_redaction_spike: float = option(0.05, "Redactions per row at or below this are never a spike (WARN).")
    max_eval_drift: float = option(0.05, "The champion's pass@1 when re-evaluated may fall this much below what "
                                         "it scored when promoted, in any domain, before a warning.")
    min_pool_ratio: float = option(0.25, "A task pool smaller than this share of the median earlier pool has "
                                         "stopped finding failures (WARN; an empty pool is an ERROR).")

    def __post_init__(self) -> None:
        if self.window < 1 or self.baseline_days < 1:
            raise ValueError(f"AlertThresholds.window and baseline_days must be >= 1, got {self.window}, "
                             f"{self.baseline_days}")
        for name in ("min_signal_share", "hacking_reward_rise", "hacking_heldout_drop", "max_verifier_infra_rate",
                     "min_quarantine_spike", "max_eval_drift", "min_pool_ratio"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"AlertThresholds.{name} must be in [0, 1], got {getattr(self, name)}")
        for name in ("min_entropy", "min_reward_std", "min_redaction_spike"):
            if getattr(self, name) < 0:
                raise ValueError(f"AlertThresholds.{name} must be >= 0, got {getattr(self, name)}")
        if self.spike_factor <= 1.0:
            raise ValueError(f"AlertThresholds.spike_factor must be > 1, got {self.spike_factor}")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
