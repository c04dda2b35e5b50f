"""What is installed, described: the rows of `flywheel envs list` and of the domain list in docs/environments.md."""

from __future__ import annotations

import functools
from typing import Any

from flywheel.environments.boundary import IMPORT_DEADLINE_S, PluginError, within
from flywheel.environments.registry import EnvironmentRegistry, default_environments


def _count(env: Any, domain: str, split: str, errors: list[str]) -> int | None:
    """The count under the plug-in deadline: a plug-in that hangs here is reported once and not asked again."""
    if any(e.startswith(f"plug-in {env.name!r}") for e in errors):
        return None
    try:
        return within(functools.partial(env.task_count, domain, split), IMPORT_DEADLINE_S, repr(env.name),
                      "task_count")
    except PluginError as e:
        errors.append(str(e))
        return None
    except Exception:  # noqa: BLE001 - a count is informative only; the listing still shows the domain
        return None


def catalog(registry: EnvironmentRegistry | None = None) -> dict[str, Any]:
    """`{"environments": [...], "domains": N, "families": {...}, "errors": [...]}` for the installed environments.

    Each environment: name, family, version, source (entry point and distribution) and its domains,
    each with its task counts per split (None: procedural, unbounded) and difficulty levels."""
    reg = registry or default_environments()
    sources = reg.sources()
    envs, families, errors = [], {}, list(reg.errors)
    for env in reg.environments():
        doms = []
        for d in env.domains():
            if not reg.has_domain(d) or reg.for_domain(d) is not env:
                continue  # claimed by an earlier environment (reported in errors)
            doms.append({"domain": d, "train": _count(env, d, "train", errors),
                         "heldout": _count(env, d, "heldout", errors),
                         "levels": list(env.levels(d)) if hasattr(env, "levels") else []})
        families[env.family] = families.get(env.family, 0) + len(doms)
        envs.append({"name": env.name, "family": env.family, "version": str(env.version),
                     "source": str(sources.get(env.name, "")), "domains": doms})
    return {"environments": envs, "domains": sum(len(e["domains"]) for e in envs), "families": families,
            "errors": errors}


def _n(x: int | None) -> str:
    return "procedural" if x is None else str(x)


def text(cat: dict[str, Any], width: int = 100) -> str:
    """The catalog for a terminal: one block per environment, its domains wrapped."""
    lines = [f"{cat['domains']} domains in {len(cat['environments'])} environments"]
    for e in cat["environments"]:
        lines.append(f"\n{e['name']}  family={e['family']}  version={e['version']}  ({len(e['domains'])} domains)")
        counts = {(_n(d["train"]), _n(d["heldout"])) for d in e["domains"]}
        if len(counts) == 1:
            tr, ho = counts.pop()
            lines.append(f"  tasks per domain: train {tr}, held-out {ho}")
            cur = "  "
            for d in e["domains"]:
                item = d["domain"] + (f"[L1-{max(d['levels'])}]" if d["levels"] else "")
                if len(cur) + len(item) + 1 > width:
                    lines.append(cur.rstrip())
                    cur = "  "
                cur += item + " "
            lines.append(cur.rstrip())
        else:
            for d in e["domains"]:
                lines.append(f"  {d['domain']:28s} train {_n(d['train']):>10s}  held-out {_n(d['heldout']):>10s}")
    for err in cat["errors"]:
        lines.append(f"\nerror: {err}")
    return "\n".join(lines)


def markdown(cat: dict[str, Any]) -> str:
    """The domain list of docs/environments.md (regenerate with `python -m flywheel.environments.catalog`);
    versions change with the verifiers, so `flywheel envs list` shows them, not this table."""
    out = ["| domain | environment | family | levels |", "| --- | --- | --- | --- |"]
    for e in cat["environments"]:
        for d in e["domains"]:
            lv = f"1-{max(d['levels'])}" if d["levels"] else "-"
            out.append(f"| `{d['domain']}` | {e['name']} | {e['family']} | {lv} |")
    return "\n".join(out)


if __name__ == "__main__":
    print(markdown(catalog()))
