"""Promotion in two phases: the offline gate makes a candidate the `challenger`, its canary makes it champion.

Phase 1 (`stage_challenger`, called by `deploy_candidate(..., challenger=True)`): the candidate that passes
the offline gate gets the registry alias `challenger`; `champion` does not move. Phase 2 (`settle_challenger`):
the challenger has answered a share of the day's production requests in shadow beside the champion
(`flywheel.serving.canary`), and the paired live verdict (`flywheel.monitoring.canary.canary_verdict`)
decides: not shown worse -> `champion` moves to it; shown to lose -> it stays a registered version, not
promoted, the canary's sentence as the reason. Either way the `challenger` alias is removed and the version
carries the verdict (tag `flywheel.canary`) and the final decision (`flywheel.promoted`,
`flywheel.gate_reason`), which `flywheel.registry.history` shows.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from flywheel.evaluation.runner import Comparison
from flywheel.monitoring.canary import CanaryVerdict, eval_vs_live
from flywheel.registry.gate import GateConfig, PromotionDecision, decide, not_non_inferior
from flywheel.registry.mlflow_registry import DEFAULT_MODEL_NAME, ModelRef, Registry

CANARY_TAG = "flywheel.canary"
"""Tag on a version: its canary's verdict (JSON), or why none ran."""


def stage_challenger(registry: Registry, candidate: ModelRef, comparison: Comparison | None,
                     gate: GateConfig | None = None) -> PromotionDecision:
    """The offline gate, phase 1: a passing candidate becomes `challenger` (never champion here)."""
    gate = gate or GateConfig()
    champ = registry.champion()
    passed, reason = decide(comparison, gate)
    if passed:
        registry.set_challenger(candidate.version, reason=reason)
        said = reason.split(": ", 1)[1] if reason.startswith("promoted ") else reason  # the gate's evidence
        reason = (f"challenger {candidate.uri}: passed the offline gate ({said}); promoted only if its canary "
                  "on live traffic holds")
    registry.set_tags(candidate.version, {"flywheel.promoted": "false", "flywheel.gate_passed": str(passed).lower(),
                                          "flywheel.gate_reason": reason[:4000],
                                          "flywheel.gate": json.dumps(gate.to_dict())})
    overall = comparison.diffs["overall"].value if comparison else None
    failing = not_non_inferior(comparison, gate) if comparison else ()
    now = champ.uri if champ else None
    return PromotionDecision(False, reason, candidate.uri, now, now, overall, failing)


@dataclass(frozen=True)
class CanaryOutcome:
    """Phase 2's decision on one challenger: promoted or not, why, the live verdict, eval beside live."""

    challenger: str
    promoted: bool
    reason: str
    champion: str
    verdict: CanaryVerdict | None
    table: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"challenger": self.challenger, "promoted": self.promoted, "reason": self.reason,
                "champion": self.champion, "canary": self.verdict.to_dict() if self.verdict else None,
                "eval_vs_live": self.table}


def _rates(ref: ModelRef, key: str) -> dict[str, float]:
    try:
        return {k: float(v) for k, v in json.loads(ref.tags.get(key, "{}")).items()}
    except (json.JSONDecodeError, TypeError, ValueError):
        return {}


def settle_challenger(tracking_uri: str, verdict: CanaryVerdict | None, no_canary: str = "",
                      model_name: str = DEFAULT_MODEL_NAME) -> CanaryOutcome | None:
    """Phase 2: promote the `challenger` when its canary `verdict` passed, else keep the champion; None without a
    challenger. `verdict=None` means no live traffic could be shadowed (`no_canary` says why): the offline gate
    alone decides, and the reason says so. A champion that moved since the challenger was evaluated (another
    base model promoted in between) makes the comparison stale: not promoted."""
    reg = Registry(tracking_uri, model_name)
    chal = reg.challenger()
    if chal is None:
        return None
    champ = reg.champion()
    before = champ.uri if champ else ""
    compared_to = chal.tags.get("flywheel.compared_to", "")
    gate_said = chal.tags.get("flywheel.gate_reason", "")
    if champ is not None and compared_to and champ.uri != compared_to:
        promoted, reason = False, (f"kept {before}: the champion changed since {chal.uri} was evaluated against "
                                   f"{compared_to}; re-run eval_report")
    elif verdict is None:
        promoted, reason = True, f"promoted {chal.uri} on the offline gate alone (no canary: {no_canary})"
    elif verdict.passed:
        promoted, reason = True, f"promoted {chal.uri}: {verdict.reason}"
    else:
        promoted, reason = False, f"kept {before}: {verdict.reason}"
    if promoted:
        reg.set_champion(chal.version, reason=f"{reason}; offline: {gate_said}"[:200])
    reg.clear_challenger()
    reg.set_tags(chal.version, {"flywheel.promoted": str(promoted).lower(), "flywheel.gate_reason": reason[:4000],
                                CANARY_TAG: verdict.to_dict() if verdict else {"ran": False, "reason": no_canary}})
    after = reg.champion()
    table = eval_vs_live(_rates(chal, "flywheel.champion_pass_rates"), _rates(chal, "flywheel.eval_pass_rates"),
                         verdict)
    return CanaryOutcome(chal.uri, promoted, reason, after.uri if after else "", verdict, table)
