"""The promotion gate: a pre-declared statistical test of candidate against champion.

Both models are scored on the same held-out tasks and compared task by task (paired). The rule, per
*unit* (a suite's domain: `math` in-distribution, `production/math` as production asks it; with
`non_inferiority_by="family"` an environment's many small domains pooled as one family). The frozen test
suite's units (`test/...`) are never read here: a recipe tuned against the gate can not tune against them.

- **a gain**: some unit's one-sided paired lower bound at confidence 1 - alpha/m (Bonferroni over the m
  units a gain could come from: at most alpha, 5 %, of candidates no better on any unit are promoted) lies
  above `margin`. A real turn's gain is often carried by one
  domain; pooling every task into one "overall" mean dilutes it by the unchanged ones, and testing
  each unit at the plain 95 % would promote an unchanged model on ~7 % of turns with three units.
- **no unit worse**: each unit's 95 % interval rules out a drop of `non_inferiority_scale / sqrt(n)`
  (n: its paired tasks), kept within [`non_inferiority`, `non_inferiority_max`]: the drop its size can
  resolve. A fixed margin fails an unchanged 24-task domain on a quarter of turns (its interval alone is
  +-0.12 wide); one scaled to the size fails an unchanged unit on about 1 % of turns at any size.

A point estimate alone never promotes. `benchmarks/bench_gate.py` measures, on simulated candidates
with uneven per-task changes, what this rule promotes by chance, what it catches and how often an
unchanged domain fails non-inferiority (`flywheel.registry.gate_sim`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from math import sqrt
from statistics import NormalDist
from typing import Any

from flywheel.config_fields import check_choices, option
from flywheel.evaluation.metrics import Estimate
from flywheel.evaluation.runner import Comparison
from flywheel.tasks.world_suites import GATED_SUITES, suite_of

PRIMARY_ANY = "any"
PRIMARY_OVERALL = "overall"


@dataclass(frozen=True)
class GateConfig:
    """What the gate requires; declared before the evaluation runs and recorded on the model version."""

    primary: str = option(PRIMARY_ANY, "Primary metric, pass@1 at the serving temperature: 'any' (the best "
                                       "domain or family, its interval Bonferroni-widened for how many there "
                                       "are), 'overall' (all tasks pooled), or one domain or family:NAME.")
    margin: float = option(0.0, "The primary's paired CI lower bound must be above this pass@1 gain.",
                           ge=-1.0, le=1.0)
    non_inferiority: float = option(0.10, "Least non-inferiority margin: the smallest drop any domain must "
                                          "rule out (a large domain's scaled margin is raised to this).",
                                   ge=0.0, le=1.0)
    non_inferiority_scale: float = option(1.25, "A domain (or family) of n paired tasks must rule out a drop "
                                                 "of this / sqrt(n) pass@1, within [non_inferiority, "
                                                 "non_inferiority_max]: 0.25 at 24 tasks, 0.16 at 60; 0: the "
                                                 "fixed margin non_inferiority at every size.", ge=0.0)
    non_inferiority_max: float = option(0.25, "Largest non-inferiority margin, however few the tasks.",
                                        ge=0.0, le=1.0)
    non_inferiority_by: str = option("family", "What each check covers: family (math, code and agent each "
                                               "alone; an environment with two or more domains in the "
                                               "evaluation as one family, tasks pooled) | domain (every "
                                               "domain alone).", choices=("family", "domain"))

    def __post_init__(self) -> None:
        if not self.primary:
            raise ValueError("GateConfig.primary must name 'any', 'overall', a domain or family:NAME")
        check_choices(self)
        if self.non_inferiority_max < self.non_inferiority:
            raise ValueError(f"GateConfig.non_inferiority_max ({self.non_inferiority_max}) must be >= "
                             f"non_inferiority ({self.non_inferiority})")

    def ni_margin(self, n: int) -> float:
        """The drop a unit of `n` paired tasks must rule out."""
        scaled = self.non_inferiority_scale / sqrt(max(n, 1))
        return min(self.non_inferiority_max, max(self.non_inferiority, scaled))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class PromotionDecision:
    """What the gate decided and why, in one sentence a person can act on."""

    promoted: bool
    reason: str
    candidate: str
    champion_before: str | None
    champion_after: str | None
    overall_diff: float | None = None
    regressions: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["regressions"] = list(self.regressions)
        return d


def _ci(e: Estimate) -> str:
    return f"{e.value:+.3f} [{e.lo:+.3f}, {e.hi:+.3f}]"


def non_inferiority_units(comparison: Comparison, gate: GateConfig) -> dict[str, Estimate]:
    """The units the gate judges: domains, with rolled-up families in place of their domains when
    `non_inferiority_by` is family."""
    units = {d: e for d, e in comparison.diffs.items() if gated(d) and not is_overall(d)}
    if gate.non_inferiority_by == "family":
        for fam, doms in comparison.families.items():
            if fam in comparison.family_diffs:
                for d in doms:
                    units.pop(d, None)
                units[f"family:{fam}"] = comparison.family_diffs[fam]
    return units


def gated(unit: str) -> bool:
    """Whether the gate may read `unit`: never the frozen test suite's (`test/...`)."""
    return suite_of(unit.removeprefix("family:")) in GATED_SUITES


def is_overall(unit: str) -> bool:
    return unit == PRIMARY_OVERALL or unit.endswith("/" + PRIMARY_OVERALL)


def _failing(units: dict[str, Estimate], gate: GateConfig) -> tuple[str, ...]:
    return tuple(u for u, e in units.items() if e.n and not e.lo > -gate.ni_margin(e.n))


def not_non_inferior(comparison: Comparison, gate: GateConfig) -> tuple[str, ...]:
    """Domains (or families) whose drop beyond their non-inferiority margin the evaluation cannot rule out."""
    return _failing(non_inferiority_units(comparison, gate), gate)


def widened_lo(e: Estimate, m: int, alpha: float) -> float:
    """The one-sided lower bound of `e` at confidence 1 - alpha/m: a gain is one-sided, so over m units
    (Bonferroni) the chance that a candidate no unit of which is better gets promoted is at most alpha. From
    `e`'s two-sided (1 - alpha) bootstrap interval of a mean over tasks, its lower half scaled by the normal
    quantiles."""
    z = NormalDist().inv_cdf
    return e.value - (e.value - e.lo) * z(1 - alpha / max(m, 1)) / z(1 - alpha / 2)


def primaries(comparison: Comparison, gate: GateConfig, units: dict[str, Estimate]) -> dict[str, Estimate]:
    """What a gain may be shown on: every unit ('any'), or the one pre-declared metric."""
    if gate.primary == PRIMARY_ANY:
        return {u: e for u, e in units.items() if e.n}
    found = {u: e for u, e in {**comparison.diffs, **{f"family:{f}": e for f, e in comparison.family_diffs.items()}
                               }.items() if gated(u)}
    if gate.primary not in found:
        raise ValueError(f"gate primary {gate.primary!r} is not in the evaluation; it has "
                         f"{sorted(found)} (or 'any')")
    return {gate.primary: found[gate.primary]}


def decide(comparison: Comparison | None, gate: GateConfig) -> tuple[bool, str]:
    """The gate as a pure function of a paired comparison: (promote?, reason)."""
    if comparison is None:
        return True, "no champion yet: the first candidate becomes champion"
    units = non_inferiority_units(comparison, gate)
    tested = primaries(comparison, gate, units)
    failing = _failing(units, gate)
    if failing:
        worst = min(failing, key=lambda d: units[d].lo + gate.ni_margin(units[d].n))
        e = units[worst]
        what = f"regressed by {-e.value:.3f} pass@1" if e.value < 0 else "was not shown non-inferior"
        return False, (f"kept {comparison.baseline}: {worst} {what} ({_ci(e)} over {e.n} tasks; non-inferiority "
                       f"needs the lower bound above {-gate.ni_margin(e.n):+.3f}; failing: {', '.join(failing)})")
    if not tested:
        return False, f"kept {comparison.baseline}: no shared tasks to compare on"
    m = len(tested)
    lows = {u: widened_lo(e, m, comparison.alpha) for u, e in tested.items()}
    best = max(lows, key=lambda u: lows[u])
    e, lo = tested[best], lows[best]
    level = (f"; one-sided at {1 - comparison.alpha / m:.1%} for {m} domains the lower bound is {lo:+.3f}" if m > 1
             else f"; one-sided at {1 - comparison.alpha:.0%} the lower bound is {lo:+.3f}")
    if not lo > gate.margin:
        noise = "indistinguishable from noise" if lo <= 0 else "below the margin"
        best_of = "the best domain, " if m > 1 else ""
        return False, (f"kept {comparison.baseline}: {best_of}{best} pass@1 change {_ci(e)} over {e.n} paired "
                       f"tasks{level}, is {noise}: it does not beat the margin {gate.margin:.3f}")
    fams = [u for u in units if u.startswith("family:")]
    every = "every domain" + (f" ({', '.join(fams)} pooled)" if fams else "")
    return True, (f"promoted {comparison.candidate}: {best} pass@1 {_ci(e)} over {e.n} paired tasks{level}, "
                  f"above the margin {gate.margin:.3f}; {every} non-inferior within its margin "
                  f"({', '.join(f'{u} {gate.ni_margin(units[u].n):.2f}' for u in units)})")
