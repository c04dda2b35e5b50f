"""The flywheel's history, turn by turn: what each candidate scored against the champion it met, and
whether the champion moved. Read from the registry's version tags, so it needs no other store.

One row per registered candidate (the base model's own registration is the starting point): the day
of logs it was trained on, the champion it was compared to and both models' pass@1 per domain from
that turn's shared evaluation, the gate's decision, its canary on live traffic, and whether the rollback
sensor later moved `champion` away from it (and why).
"""

from __future__ import annotations

import io
import json
from dataclasses import asdict, dataclass, field
from typing import Any

from flywheel.registry.mlflow_registry import DEFAULT_MODEL_NAME, Registry


@dataclass(frozen=True)
class TurnRecord:
    """One turn as the registry recorded it."""

    version: str
    base_model: str
    days: tuple[str, ...]
    compared_to: str
    promoted: bool
    after: dict[str, float] = field(default_factory=dict)
    before: dict[str, float] = field(default_factory=dict)
    reason: str = ""
    canary: str = ""  # the live canary's verdict in a few words ("" when none ran)
    rolled_back: str = ""  # why the rollback sensor moved `champion` away from this version ("" if never)

    @property
    def day(self) -> str:
        return max(self.days) if self.days else ""

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "day": self.day}


def _json(tags: dict[str, str], key: str, default: Any) -> Any:
    raw = tags.get(key)
    if raw is None:
        return default
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return default


def canary_words(verdict: Any) -> str:
    """A version's `flywheel.canary` tag in a few words: passed/failed, live diff [95% CI] over n pairs."""
    if not isinstance(verdict, dict) or not verdict:
        return ""
    if "passed" not in verdict:
        return f"not run ({verdict.get('reason', 'no live traffic')})"
    return (f"{'passed' if verdict['passed'] else 'failed'} {verdict.get('diff', 0.0):+.3f} "
            f"[{verdict.get('lo', 0.0):+.3f}, {verdict.get('hi', 0.0):+.3f}] over {verdict.get('n', 0)} requests")


def turn_history(registry: Registry) -> list[TurnRecord]:
    """Every candidate version in registration order (base-model registrations left out)."""
    out = []
    for ref in registry.versions():
        if ref.is_base:
            continue
        t = ref.tags
        out.append(TurnRecord(
            version=ref.version, base_model=ref.base_model,
            days=tuple(sorted(_json(t, "flywheel.log_partitions", []))),
            compared_to=t.get("flywheel.compared_to", ""), promoted=t.get("flywheel.promoted") == "true",
            after=_json(t, "flywheel.eval_pass_rates", {}), before=_json(t, "flywheel.champion_pass_rates", {}),
            reason=t.get("flywheel.gate_reason", ""), canary=canary_words(_json(t, "flywheel.canary", {})),
            rolled_back=t.get("flywheel.rolled_back", "")))
    return out


def load_history(tracking_uri: str, model_name: str = DEFAULT_MODEL_NAME) -> list[TurnRecord]:
    """`turn_history` of the registered model at `tracking_uri`."""
    return turn_history(Registry(tracking_uri, model_name))


def history_markdown(records: list[TurnRecord]) -> str:
    """A table: per turn, the champion's and the candidate's pass@1 per domain and the decision."""
    if not records:
        return "No turn has registered a candidate yet."
    domains = sorted({d for r in records for d in r.after if d != "overall"}) + ["overall"]
    head = ("| turn | day | candidate | " + " | ".join(f"{d} before → after" for d in domains)
            + " | promoted | canary (live diff) | rolled back |")
    rows = [head, "|" + "---|" * (len(domains) + 6)]
    for i, r in enumerate(records, 1):
        cells = [f"{r.before.get(d, float('nan')):.3f} → {r.after.get(d, float('nan')):.3f}" for d in domains]
        rows.append(f"| {i} | {r.day} | v{r.version} vs {r.compared_to} | " + " | ".join(cells)
                    + f" | {'yes' if r.promoted else 'no'} | {r.canary or '-'} | "
                    + (f"yes: {r.rolled_back[:160]}" if r.rolled_back else "no") + " |")
    return "\n".join(rows)


def history_png(records: list[TurnRecord]) -> bytes:
    """pass@1 per domain of the champion serving after each turn; a filled marker where the champion moved."""
    import matplotlib  # heavy: only the history chart loads it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # heavy: only a chart loads matplotlib

    domains = sorted({d for r in records for d in r.after if d != "overall"}) + ["overall"]
    names = list(dict.fromkeys(d.rsplit("/", 1)[-1] for d in domains))  # a domain keeps its colour in every suite
    colors = {n: f"C{i}" for i, n in enumerate(names)}
    fig, ax = plt.subplots(figsize=(8, 3.6), dpi=110)
    turns = list(range(0, len(records) + 1))
    moved = [i + 1 for i, r in enumerate(records) if r.promoted]
    undone = [i + 1 for i, r in enumerate(records) if r.rolled_back]
    for d in domains:
        start = records[0].before.get(d, float("nan")) if records else float("nan")
        served, value = [start], start
        for r in records:
            value = r.after.get(d, value) if r.promoted else r.before.get(d, value)
            served.append(value)
        name = d.rsplit("/", 1)[-1]
        line, = ax.plot(turns, served, marker="o", fillstyle="none", lw=2.2 if name == "overall" else 1.2, label=d,
                        color=colors[name], ls="--" if "/" in d else "-")  # dashed: another suite (production)
        ax.plot(moved, [served[i] for i in moved], "o", color=line.get_color())
        ax.plot(undone, [served[i] for i in undone], "x", ms=10, color=line.get_color())
    ax.set_xlabel("turn (0 = base model)")
    ax.set_ylabel("pass@1 of the champion")
    ax.set_xticks(turns)
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.set_title("champion served after each turn\n(filled: promoted that turn; x: rolled back later)", fontsize=9)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight")  # the legend beside the axes stays in the picture
    plt.close(fig)
    return buf.getvalue()
