"""Domain mixes over many environments: weights and eval sizes written with patterns, expanded to domains.

A key is a domain (`math`, `rg.gcd`), a glob over the installed domains (`rg.*`), or a family
(`family:reasoning-gym`). `expand_weights` spreads a pattern's weight evenly over its domains, so
`{"math": 0.5, "rg.*": 0.5}` gives reasoning-gym half the stream whatever its size; `expand_counts`
gives each matched domain the pattern's count. An explicit domain key wins over a pattern. A key
matching nothing is an error naming it.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping

BUILTIN = ("math", "code", "agent")


def _is_pattern(key: str) -> bool:
    return key.startswith("family:") or any(c in key for c in "*?[")


def needs_registry(keys: Mapping[str, object]) -> bool:
    """Whether any key is beyond the built-in domains (expanding it loads the installed environments)."""
    return any(k not in BUILTIN for k in keys)


def match(key: str, registry: object | None = None) -> list[str]:
    """The installed domains `key` names (a domain, a glob or `family:NAME`); ValueError when none."""
    from flywheel.environments.registry import default_environments

    reg = registry or default_environments()
    domains = list(dict.fromkeys([*BUILTIN, *reg.domains()]))
    if key.startswith("family:"):
        fam = key.split(":", 1)[1]
        found = [d for d in domains if d not in BUILTIN and reg.family_of(d) == fam]
    elif _is_pattern(key):
        found = fnmatch.filter(domains, key)
    else:
        found = [key] if key in domains else []
    if not found:
        fams = sorted({reg.family_of(d) for d in reg.domains()})
        raise ValueError(f"domain key {key!r} matches no installed domain (families: {fams}; "
                         f"`flywheel envs list` shows every domain)")
    return found


def expand_weights(weights: Mapping[str, float], registry: object | None = None) -> dict[str, float]:
    """Per-domain weights: a pattern's weight split evenly over its domains; explicit domains win."""
    if not needs_registry(weights):
        return dict(weights)
    out: dict[str, float] = {}
    for key, w in weights.items():
        if _is_pattern(key):
            doms = [d for d in match(key, registry) if d not in weights]
            for d in doms:
                out[d] = out.get(d, 0.0) + float(w) / len(doms)
    for key, w in weights.items():
        if not _is_pattern(key):
            match(key, registry)
            out[key] = float(w)
    return out


def expand_counts(counts: Mapping[str, int], registry: object | None = None) -> dict[str, int]:
    """Per-domain counts: each domain a pattern matches gets its count; explicit domains win."""
    if not needs_registry(counts):
        return dict(counts)
    out: dict[str, int] = {}
    for key, n in counts.items():
        if _is_pattern(key):
            out.update({d: int(n) for d in match(key, registry) if d not in counts})
    for key, n in counts.items():
        if not _is_pattern(key):
            match(key, registry)
            out[key] = int(n)
    return out
