"""The promotion gate: a pre-declared statistical test of candidate against champion.

Both models are scored on the same held-out tasks and compared task by task (paired). The
candidate is promoted only when the paired confidence interval of the primary metric lies
wholly above `margin` (a gain that sampling noise is unlikely to have produced), and every
domain is shown non-inferior: its interval's lower bound is above `-non_inferiority`. Where an
environment contributes many small domains (reasoning-gym's 20 tasks each), they are judged as their
family, tasks pooled (`non_inferiority_by="family"`): twenty 20-task intervals are each about ±0.1
wide, so one of them would fail by chance on most turns. A point
estimate alone never promotes: on a few dozen tasks a +5-point "gain" is often luck.
`benchmarks/bench_gate.py` measures what this rule promotes by chance and what it catches.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from flywheel.config_fields import check_choices, option
from flywheel.evaluation.metrics import Estimate
from flywheel.evaluation.runner import Comparison

PRIMARY_OVERALL = "overall"


@dataclass(frozen=True)
class GateConfig:
    """What the gate requires; declared before the evaluation runs and recorded on the model version."""

    primary: str = option(PRIMARY_OVERALL, "Primary metric: pass@1 at the serving temperature, 'overall' "
                                           "(all tasks pooled) or one domain.")
    margin: float = option(0.0, "The primary's paired CI lower bound must be above this pass@1 gain.")
    non_inferiority: float = option(0.10, "Every domain's paired CI lower bound must be above minus this "
                                          "(the largest drop the gate tolerates not ruling out).")
    non_inferiority_by: str = option("family", "What each non-inferiority check covers: family (math, code "
                                               "and agent each alone; an environment with two or more domains "
                                               "in the evaluation as one family, tasks pooled) | domain (every "
                                               "domain alone).", choices=("family", "domain"))

    def __post_init__(self) -> None:
        if not self.primary:
            raise ValueError("GateConfig.primary must name 'overall' or a domain")
        check_choices(self)
        if self.non_inferiority < 0:
            raise ValueError(f"GateConfig.non_inferiority must be >= 0, got {self.non_inferiority}")

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
    """What each non-inferiority check judges: domains, with rolled-up families in place of their domains
    when `non_inferiority_by` is family."""
    units = {d: e for d, e in comparison.diffs.items() if d != PRIMARY_OVERALL}
    if gate.non_inferiority_by == "family":
        for fam, doms in comparison.families.items():
            if fam in comparison.family_diffs:
                for d in doms:
                    units.pop(d, None)
                units[f"family:{fam}"] = comparison.family_diffs[fam]
    return units


def _failing(units: dict[str, Estimate], gate: GateConfig) -> tuple[str, ...]:
    return tuple(u for u, e in units.items() if e.n and not e.lo > -gate.non_inferiority)


def not_non_inferior(comparison: Comparison, gate: GateConfig) -> tuple[str, ...]:
    """Domains (or families) whose drop beyond the non-inferiority margin the evaluation cannot rule out."""
    return _failing(non_inferiority_units(comparison, gate), gate)


def decide(comparison: Comparison | None, gate: GateConfig) -> tuple[bool, str]:
    """The gate as a pure function of a paired comparison: (promote?, reason)."""
    if comparison is None:
        return True, "no champion yet: the first candidate becomes champion"
    if gate.primary not in comparison.diffs:
        raise ValueError(f"gate primary {gate.primary!r} is not in the evaluation; "
                         f"it has {sorted(comparison.diffs)}")
    units = non_inferiority_units(comparison, gate)
    failing = _failing(units, gate)
    if failing:
        worst = min(failing, key=lambda d: units[d].lo)
        e = units[worst]
        what = f"regressed by {-e.value:.3f} pass@1" if e.value < 0 else "was not shown non-inferior"
        return False, (f"kept {comparison.baseline}: {worst} {what} ({_ci(e)}; non-inferiority needs the lower "
                       f"bound above {-gate.non_inferiority:+.3f}; failing: {', '.join(failing)})")
    primary = comparison.diffs[gate.primary]
    if not primary.n:
        return False, f"kept {comparison.baseline}: no shared tasks to compare on"
    if not primary.lo > gate.margin:
        noise = "indistinguishable from noise" if primary.lo <= 0 <= primary.hi else "below the margin"
        return False, (f"kept {comparison.baseline}: {gate.primary} pass@1 change {_ci(primary)} over "
                       f"{primary.n} paired tasks is {noise}: its lower bound does not beat the margin "
                       f"{gate.margin:.3f}")
    fams = [u for u in units if u.startswith("family:")]
    every = "every domain" + (f" ({', '.join(fams)} pooled)" if fams else "")
    return True, (f"promoted {comparison.candidate}: {gate.primary} pass@1 {_ci(primary)} over {primary.n} "
                  f"paired tasks, lower bound above the margin {gate.margin:.3f}; {every} non-inferior "
                  f"within {gate.non_inferiority:.3f}")
