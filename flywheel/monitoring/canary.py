"""The canary's verdict: does the candidate, answering real requests in shadow beside the champion, do at
least as well as the champion on the same requests?

Each pair is one production request both models answered (both verified; only the champion's answer was
served). The paired difference (candidate passed - champion passed) per request has mean d; its interval
is a normal interval over requests, which is accurate at the hundreds of pairs a canary day gives. The
candidate fails the canary when the whole interval lies below -`margin`: it is shown to lose on today's
traffic, which the held-out sets may not represent. The burden of proof stays where it is: the offline gate
must show the candidate is better; the canary, that it does no harm (a share of one day's traffic gives a
few hundred pairs, too few to prove equality within a point or two, plenty to catch a real loss).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from flywheel.config_fields import check_choices, option

Z95 = 1.959964


@dataclass(frozen=True)
class CanaryConfig:
    """How much of a day's traffic the candidate shadows and what it must show there."""

    share: float = option(0.1, "Share of the day's requests the candidate also answers, in shadow (seeded).", gt=0, le=1)
    margin: float = option(0.0, "The canary fails when the paired 95% interval of candidate minus champion "
                                "lies wholly below -margin: the candidate loses on the shared requests.", ge=0, le=0.5)
    min_pairs: int = option(100, "Paired requests needed before the canary can pass; fewer is a fail.", ge=1)
    seed: int = option(0, "Seed of which requests are shadowed.")

    def __post_init__(self) -> None:
        check_choices(self)  # the ranges on the fields, no NaN


@dataclass(frozen=True)
class Pair:
    """One request both models answered."""

    task_id: str
    domain: str
    champion: bool
    candidate: bool


@dataclass(frozen=True)
class CanaryVerdict:
    """The paired live comparison: candidate minus champion pass rate on the shadowed requests."""

    passed: bool
    reason: str
    n: int
    diff: float
    lo: float
    hi: float
    per_domain: dict[str, dict[str, float]] = field(default_factory=dict)
    champion_rate: float | None = None  # live pass rate of each on the shadowed requests (None: too few)
    candidate_rate: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _interval(diffs: Sequence[int]) -> tuple[float, float, float]:
    d = statistics.fmean(diffs)
    half = Z95 * math.sqrt(statistics.pvariance(diffs) / len(diffs)) if len(diffs) > 1 else 1.0
    return d, d - half, d + half


def canary_verdict(pairs: Sequence[Pair], config: CanaryConfig | None = None) -> CanaryVerdict:
    """Non-inferiority of the candidate on the shadowed requests (see the module doc)."""
    cfg = config or CanaryConfig()
    if len(pairs) < cfg.min_pairs:
        return CanaryVerdict(False, f"canary: {len(pairs)} shadowed requests, fewer than {cfg.min_pairs}",
                             len(pairs), 0.0, -1.0, 1.0)
    d, lo, hi = _interval([int(p.candidate) - int(p.champion) for p in pairs])
    per: dict[str, dict[str, float]] = {}
    for dom in sorted({p.domain for p in pairs}):
        ps = [p for p in pairs if p.domain == dom]
        dd, dlo, dhi = _interval([int(p.candidate) - int(p.champion) for p in ps])
        per[dom] = {"n": len(ps), "champion": round(statistics.fmean(p.champion for p in ps), 4),
                    "candidate": round(statistics.fmean(p.candidate for p in ps), 4),
                    "diff": round(dd, 4), "lo": round(dlo, 4), "hi": round(dhi, 4)}
    ok = hi >= -cfg.margin
    said = (f"canary: candidate {d:+.3f} [{lo:+.3f}, {hi:+.3f}] vs the champion on {len(pairs)} shadowed "
            f"production requests; " + ("not shown worse" if ok else "it loses on live traffic"))
    return CanaryVerdict(ok, said, len(pairs), round(d, 4), round(lo, 4), round(hi, 4), per,
                         round(statistics.fmean(p.champion for p in pairs), 4),
                         round(statistics.fmean(p.candidate for p in pairs), 4))


def side_by_side(eval_diffs: Mapping[str, float], verdict: CanaryVerdict) -> str:
    """A Markdown table: per domain, the offline evaluation's pass@1 difference beside the canary's live one."""
    rows = ["| domain | eval diff (held-out) | live diff (canary) | live pairs |", "|---|---|---|---|"]
    for dom in sorted(set(eval_diffs) | set(verdict.per_domain) - {"overall"}):
        live = verdict.per_domain.get(dom)
        ev = eval_diffs.get(dom)
        rows.append(f"| {dom} | {'n/a' if ev is None else f'{ev:+.3f}'} | "
                    + (f"{live['diff']:+.3f} [{live['lo']:+.3f}, {live['hi']:+.3f}] | {live['n']} |" if live
                       else "n/a | 0 |"))
    ov = eval_diffs.get("overall")
    rows.append(f"| overall | {'n/a' if ov is None else f'{ov:+.3f}'} | {verdict.diff:+.3f} "
                f"[{verdict.lo:+.3f}, {verdict.hi:+.3f}] | {verdict.n} |")
    return "\n".join(rows)


def eval_vs_live(eval_before: Mapping[str, float], eval_after: Mapping[str, float],
                 verdict: CanaryVerdict | None) -> list[dict[str, Any]]:
    """Per domain and overall: the offline evaluation's pass@1 (champion, candidate, difference) beside the
    canary's live pass rates on the shadowed requests (champion, candidate, difference with its 95% interval,
    pairs). A figure nobody measured is None."""
    live = dict(verdict.per_domain) if verdict else {}
    if verdict and verdict.n:
        live["overall"] = {"n": verdict.n, "champion": verdict.champion_rate, "candidate": verdict.candidate_rate,
                           "diff": verdict.diff, "lo": verdict.lo, "hi": verdict.hi}
    domains = sorted((set(eval_after) | set(eval_before) | set(live)) - {"overall"}) + ["overall"]
    rows = []
    for d in domains:
        b, a, lv = eval_before.get(d), eval_after.get(d), live.get(d, {})
        rows.append({"domain": d, "eval_champion": b, "eval_candidate": a,
                     "eval_diff": None if a is None or b is None else round(a - b, 4),
                     "live_champion": lv.get("champion"), "live_candidate": lv.get("candidate"),
                     "live_diff": lv.get("diff"), "live_lo": lv.get("lo"), "live_hi": lv.get("hi"),
                     "live_pairs": int(lv.get("n", 0))})
    return rows


def eval_vs_live_markdown(rows: Sequence[Mapping[str, Any]]) -> str:
    """`eval_vs_live`'s rows as a Markdown table (n/a where a figure was not measured)."""
    def f(v: Any, sign: str = "") -> str:
        return "n/a" if v is None else f"{v:{sign}.3f}"

    out = ["| domain | eval champion | eval candidate | eval diff | live champion | live candidate | "
           "live diff [95% CI] | live pairs |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ci = "" if r["live_lo"] is None else f" [{r['live_lo']:+.3f}, {r['live_hi']:+.3f}]"
        out.append(f"| {r['domain']} | {f(r['eval_champion'])} | {f(r['eval_candidate'])} | {f(r['eval_diff'], '+')} "
                   f"| {f(r['live_champion'])} | {f(r['live_candidate'])} | {f(r['live_diff'], '+')}{ci} "
                   f"| {r['live_pairs']} |")
    return "\n".join(out)
