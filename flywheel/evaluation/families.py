"""Roll-up by family: with dozens of environment domains, each family's tasks pooled into one row.

A domain's family is its environment's (`rg.*` -> `reasoning-gym`); math, code and agent stand on
their own rows and are not rolled up. A family is rolled up when the report holds two or more of
its domains. The roll-up pools the tasks (micro average), with the same seeded bootstrap as a
domain's row, so with equal tasks per domain it is the mean over the family's domains.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from flywheel.evaluation.metrics import Estimate, paired_difference
from flywheel.tasks.suites import DOMAINS


def family_of(domain: str) -> str | None:
    """The family a domain rolls up into (None: a built-in domain, or one no installed environment serves)."""
    if domain in DOMAINS:
        return None
    from flywheel.environments.registry import UnknownDomainError, default_environments

    try:
        return default_environments().family_of(domain)
    except UnknownDomainError:
        return None


def family_groups(domains: Sequence[str]) -> dict[str, list[str]]:
    """family -> its domains among `domains`, for families with at least two of them."""
    out: dict[str, list[str]] = {}
    for d in dict.fromkeys(domains):
        fam = family_of(d)
        if fam is not None:
            out.setdefault(fam, []).append(d)
    return {f: ds for f, ds in out.items() if len(ds) >= 2}


def family_metrics(report: Any) -> dict[str, dict[str, Estimate]]:
    """`{family: {metric: Estimate}}` over the pooled tasks of each rolled-up family of `report`."""
    from flywheel.evaluation.runner import aggregate

    groups = family_groups([t.domain for t in report.tasks])
    out = {}
    for fam, doms in groups.items():
        rs = [t for t in report.tasks if t.domain in doms]
        out[fam] = aggregate(rs, report.config)["overall"]
    return out


def family_diffs(candidate: Any, baseline: Any, groups: dict[str, list[str]] | None = None) -> dict[str, Estimate]:
    """Paired candidate-minus-baseline pass@1 per rolled-up family, on the tasks both reports share
    (`groups`: the candidate's `family_groups`, when the caller already has them)."""
    cfg = candidate.config
    out = {}
    if groups is None:
        groups = family_groups([t.domain for t in candidate.tasks])
    for fam, doms in groups.items():
        c = {t.task_id: t.pass1 for t in candidate.tasks if t.domain in doms}
        b = {t.task_id: t.pass1 for t in baseline.tasks if t.domain in doms}
        common = sorted(set(c) & set(b))
        out[fam] = paired_difference([c[i] for i in common], [b[i] for i in common],
                                     n_boot=cfg.n_boot, alpha=cfg.alpha, seed=cfg.seed)
    return out


def family_table(report: Any, baseline: Any | None = None) -> str:
    """Markdown: one row per rolled-up family (domains, tasks, pass@1 [CI], and vs the baseline)."""
    from flywheel.evaluation.report import fmt_estimate, reads_as

    fams = family_metrics(report)
    if not fams:
        return ""
    groups = family_groups([t.domain for t in report.tasks])
    diffs = family_diffs(report, baseline) if baseline is not None else {}
    head = "| family | domains | tasks | pass@1 |" + (" difference vs baseline [95% CI] | reads as |" if diffs else "")
    lines = [head, "|---|---|---|---|" + ("---|---|" if diffs else "")]
    for fam, m in fams.items():
        row = f"| {fam} | {len(groups[fam])} | {m['pass@1'].n} | {fmt_estimate(m['pass@1'])} |"
        if diffs:
            row += f" {fmt_estimate(diffs[fam])} | {reads_as(diffs[fam])} |"
        lines.append(row)
    return "\n".join(lines)
