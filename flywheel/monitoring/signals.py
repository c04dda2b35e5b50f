"""Each watched signal as a pure function: plain numbers in, a `Signal` (passed or not, how bad, why) out.

The inputs are what the stages already record: the trainer's per-step metrics (`TrainResult.history`, the
same keys the MLflow run holds), the `verifiers` table's reasons, ingest's per-day counts, the evaluation's
pass rates and the task pool's sizes (`flywheel.monitoring.sources` reads them). A signal with nothing to
judge (a stage that does not measure it) passes and says so in its message.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from flywheel.monitoring.thresholds import AlertThresholds

WARN, ERROR = "WARN", "ERROR"
INFRA_PREFIX = "judge error"
"""How `flywheel.verifiers.construct` words a validation the judge could not answer (infrastructure, not model)."""


@dataclass(frozen=True)
class Signal:
    """One signal's verdict: `passed`, how bad a failure is (`severity`), the measured `value` against
    `threshold`, a sentence for a person, and the series it came from (for a plot)."""

    name: str
    passed: bool
    severity: str
    value: float | None
    threshold: float
    message: str
    series: tuple[float, ...] = ()
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "passed": self.passed, "severity": self.severity, "value": self.value,
                "threshold": self.threshold, "message": self.message, "series": list(self.series),
                **self.details}


def metric_series(history: Sequence[Mapping[str, float]], key: str) -> list[float]:
    """The finite values of `key`, step by step (steps that did not record it are skipped)."""
    return [float(h[key]) for h in history if key in h and math.isfinite(float(h[key]))]


def _tail(values: Sequence[float], n: int) -> float | None:
    return statistics.fmean(values[-n:]) if values else None


def entropy_collapse(history: Sequence[Mapping[str, float]], th: AlertThresholds) -> Signal:
    """Mean token entropy of the last steps below `min_entropy`: the policy samples near-deterministically."""
    ent = metric_series(history, "entropy")
    v = _tail(ent, th.window)
    if v is None:
        return Signal("entropy_collapse", True, ERROR, None, th.min_entropy, "no entropy recorded (an RFT stage "
                      "does not sample with gradients): nothing to judge")
    ok = v >= th.min_entropy
    return Signal("entropy_collapse", ok, ERROR, round(v, 6), th.min_entropy,
                  f"entropy {v:.4f} nats over the last {min(th.window, len(ent))} steps "
                  + ("is healthy" if ok else f"is below {th.min_entropy}: the policy collapsed"), tuple(ent))


def reward_collapse(history: Sequence[Mapping[str, float]], th: AlertThresholds) -> Signal:
    """GRPO's rewards no longer vary over the last steps: every sample of a group scored alike, so its
    group-normalized advantages are zero. RFT learns from passing samples alone (an all-pass or no-pass
    share is not a variance problem), so a run without `reward/std` has nothing to judge here."""
    stds = metric_series(history, "reward/std")
    v = _tail(stds, th.window)
    if v is None:
        return Signal("reward_collapse", True, ERROR, None, th.min_reward_std,
                      "no reward std recorded (an RFT stage): nothing to judge")
    ok = v >= th.min_reward_std
    means = metric_series(history, "reward/mean")
    return Signal("reward_collapse", ok, ERROR, round(v, 6), th.min_reward_std,
                  f"reward std {v:.4f} over the last steps (mean reward {means[-1] if means else float('nan'):.3f}) "
                  + ("varies" if ok else "is flat: every sample scored alike, nothing to learn from"), tuple(stds))


def _share_floor(name: str, shares: list[float], floor: float, th: AlertThresholds, none_said: str, said: str,
                 low_said: str) -> Signal:
    """A WARN signal on a share's mean over the last steps: below `floor` fails (`low_said` says why it hurts)."""
    v = _tail(shares, th.window)
    if v is None:
        return Signal(name, True, WARN, None, floor, f"{none_said}: nothing to judge")
    ok = v >= floor
    return Signal(name, ok, WARN, round(v, 4), floor,
                  f"{v:.0%} {said}" + ("" if ok else f", below {floor:.0%}: {low_said}"), tuple(shares))


def sampling_success(history: Sequence[Mapping[str, float]], th: AlertThresholds) -> Signal:
    """Share of sampled groups with a signal (1 - `groups/dropped_share`) over the last steps."""
    return _share_floor("sampling_success", [1.0 - d for d in metric_series(history, "groups/dropped_share")],
                        th.min_signal_share, th, "no group statistics recorded (RFT does not group samples)",
                        "of sampled groups had a reward signal", "most rollouts are wasted")


def finished_samples(history: Sequence[Mapping[str, float]], th: AlertThresholds) -> Signal:
    """Share of sampled responses that finished on their own (`samples/finished_share`, logged by GRPO per step
    and by RFT along its sampling round) over the last points."""
    return _share_floor("finished_samples", metric_series(history, "samples/finished_share"), th.min_finished_share,
                        th, "no finish statistics recorded", "of sampled responses finished within the budget",
                        "most are cut off (budget too small, or the policy rambles or loops)")


def reward_hacking(history: Sequence[Mapping[str, float]], heldout_diff: float | None,
                   th: AlertThresholds) -> Signal:
    """Training reward up while held-out pass@1 (candidate minus champion, `heldout_diff`) falls."""
    means = metric_series(history, "reward/mean")
    if len(means) < 2 or heldout_diff is None:
        return Signal("reward_hacking", True, ERROR, None, th.hacking_reward_rise,
                      "needs a reward curve of 2+ steps and a held-out comparison: nothing to judge")
    n = min(th.window, len(means) // 2)
    rise = statistics.fmean(means[-n:]) - statistics.fmean(means[:n])
    hacked = rise >= th.hacking_reward_rise and heldout_diff <= -th.hacking_heldout_drop
    return Signal("reward_hacking", not hacked, ERROR, round(rise, 4), th.hacking_reward_rise,
                  f"training reward {rise:+.3f} while held-out pass@1 moved {heldout_diff:+.3f} vs the champion"
                  + (": the reward rose and held-out fell, reads as reward hacking" if hacked else ""),
                  tuple(means), {"heldout_diff": heldout_diff})


def verifier_infra_rate(reasons: Sequence[str], th: AlertThresholds) -> Signal:
    """Share of verifier validations whose judge could not answer (`judge error ...`): the sandbox or the
    verifier's own machinery failed, so those verdicts say nothing about the model."""
    if not reasons:
        return Signal("verifier_infra_rate", True, ERROR, None, th.max_verifier_infra_rate,
                      "no verifiers validated: nothing to judge")
    infra = sum(r.startswith(INFRA_PREFIX) for r in reasons)
    rate = infra / len(reasons)
    ok = rate <= th.max_verifier_infra_rate
    return Signal("verifier_infra_rate", ok, ERROR, round(rate, 4), th.max_verifier_infra_rate,
                  f"{infra} of {len(reasons)} verifier validations hit an infrastructure error ({rate:.1%})"
                  + ("" if ok else f", above {th.max_verifier_infra_rate:.1%}: check the sandbox"),
                  details={"infra_errors": infra, "validations": len(reasons)})


def spike(name: str, today: float, earlier: Sequence[float], floor: float, th: AlertThresholds) -> Signal:
    """`today` above `spike_factor` x the median of the last `baseline_days` of `earlier` (and above `floor`)."""
    base = list(earlier)[-th.baseline_days:]
    median = statistics.median(base) if base else 0.0
    limit = max(floor, th.spike_factor * median)
    ok = today <= limit
    return Signal(name, ok, WARN, round(today, 6), round(limit, 6),
                  f"{name.replace('_', ' ')}: {today:.4f} today vs median {median:.4f} of {len(base)} earlier day(s)"
                  + ("" if ok else f": above {limit:.4f}, a spike"), (*base, today), {"baseline_median": median})


def eval_drift(now: Mapping[str, float], promised: Mapping[str, float], th: AlertThresholds) -> Signal:
    """The champion re-evaluated today (`now`, pass@1 per domain) against what it scored when promoted."""
    drops = {d: round(promised[d] - v, 4) for d, v in now.items() if d in promised}
    if not drops:
        return Signal("champion_eval_drift", True, WARN, None, th.max_eval_drift,
                      "no earlier evaluation of this champion to compare with: nothing to judge")
    worst = max(drops, key=lambda d: drops[d])
    ok = drops[worst] <= th.max_eval_drift
    return Signal("champion_eval_drift", ok, WARN, drops[worst], th.max_eval_drift,
                  f"largest drop since promotion: {worst} {drops[worst]:+.3f}"
                  + ("" if ok else f", beyond {th.max_eval_drift}: the champion (or the evaluation) drifted"),
                  details={"drops": drops})


def pool_dry(size: int, earlier: Sequence[int], th: AlertThresholds) -> Signal:
    """A task pool that stopped finding failures: empty (ERROR) or far below its usual size (WARN)."""
    base = list(earlier)[-th.baseline_days:]
    median = statistics.median(base) if base else 0.0
    if size == 0:
        return Signal("pool_dry", False, ERROR, 0.0, th.min_pool_ratio,
                      "the task pool is empty: mining found no learnable failures", (*map(float, base), 0.0))
    ratio = size / median if median else 1.0
    ok = ratio >= th.min_pool_ratio
    return Signal("pool_dry", ok, WARN, round(ratio, 4), th.min_pool_ratio,
                  f"pool of {size} tasks is {ratio:.0%} of the median {median:.0f} of {len(base)} earlier pool(s)"
                  + ("" if ok else ": mining stopped finding failures"), (*map(float, base), float(size)))
