"""Alert thresholds, declared once: every check and the docs read their defaults and ranges from here."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from flywheel.config_fields import check_choices, option


@dataclass(frozen=True)
class AlertThresholds:
    """When a watched signal becomes an alert. Rates are shares in [0, 1]; factors compare a day with the median
    of the days before it."""

    window: int = option(3, "Training steps (the last ones) a training signal is averaged over.", ge=1)
    min_entropy: float = option(0.05, "Mean token entropy (nats) of the last steps below this: the policy "
                                      "collapsed onto a few tokens (ERROR, blocks evaluation).", ge=0)
    min_reward_std: float = option(1e-3, "Reward std over the samples of the last steps below this: rewards are "
                                         "flat, GRPO has no signal to learn from (ERROR; the gate still judges the run).", ge=0)
    min_signal_share: float = option(0.2, "Share of sampled groups with a reward signal (not all-equal) below "
                                          "this: sampling mostly wastes its rollouts (WARN).", ge=0, le=1)
    min_finished_share: float = option(0.5, "Share of sampled responses that end on their own (not cut off by "
                                            "the token budget or the tool-step cap) below this: the budget is "
                                            "too small or the policy rambles or loops (WARN).", ge=0, le=1)
    hacking_reward_rise: float = option(0.05, "Training reward rise (last steps minus first steps) that, with "
                                              "held-out pass@1 falling, reads as reward hacking.", ge=0, le=1)
    hacking_heldout_drop: float = option(0.01, "Held-out pass@1 drop vs the champion that, with the training "
                                               "reward rising, reads as reward hacking (ERROR, blocks promotion).", ge=0, le=1)
    max_verifier_infra_rate: float = option(0.02, "Share of verifier validations the judge could not answer "
                                                  "(sandbox or verifier infrastructure failed) above this (ERROR).", ge=0, le=1)
    baseline_days: int = option(7, "Earlier days a spike is measured against (their median).", ge=1)
    spike_factor: float = option(3.0, "A day's rate above this many times the baseline median is a spike.", gt=1)
    min_quarantine_spike: float = option(0.02, "A quarantine rate at or below this is never a spike, "
                                               "whatever the baseline (WARN).", ge=0, le=1)
    min_redaction_spike: float = option(0.05, "Redactions per row at or below this are never a spike (WARN).", ge=0)
    max_eval_drift: float = option(0.05, "The champion's pass@1 when re-evaluated may fall this much below what "
                                         "it scored when promoted, in any domain, before a warning.", ge=0, le=1)
    min_pool_ratio: float = option(0.25, "A task pool smaller than this share of the median earlier pool has "
                                         "stopped finding failures (WARN; an empty pool is an ERROR).", ge=0, le=1)

    def __post_init__(self) -> None:
        check_choices(self)  # the ranges on the fields, and no NaN

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
