"""The promotion gate, measured: how often it promotes a model that is no better (false promotion)
and how often it promotes a real +5-point gain (power).

Per-task pass rates are measured, not assumed: the tiny base model is evaluated once on the held-out
suites at the serving temperature (or rates are read from an `eval_report`'s report.json with
`--report`). Each simulated turn then draws both models' samples from those rates, builds the same
`EvalReport`s the evaluation builds, and runs the real `compare` and `decide`:

- null: champion against an identical copy (same per-task rates, independent samples), many seeds;
- power: a candidate whose per-task rates are shifted in logit space so its mean is +5 points.

The previous gate (point estimate > 0, per-domain point drop <= 0.05, 60/24/24 tasks x 4 samples)
is measured beside it in the same run. The last line is one JSON object of the figures.

    python benchmarks/bench_gate.py [--sims 1000] [--report .flywheel/eval/tiny-v1/report.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from flywheel.evaluation.runner import Comparison, EvalReport, TaskResult, compare  # noqa: E402
from flywheel.evaluation.suites import EvalConfig, eval_tasks  # noqa: E402
from flywheel.registry.gate import GateConfig, decide  # noqa: E402

GAIN = 0.05


@dataclass(frozen=True)
class Design:
    """An evaluation size and the rule applied to its comparison."""

    name: str
    tasks: dict[str, int]
    samples: int
    rule: str  # "gate" (flywheel.registry.gate) | "point" (the previous point-estimate rule)


def measured_rates(report: str | None, samples: int, home: Path) -> dict[str, np.ndarray]:
    """Per-task pass rates per domain: from a report.json, or by evaluating the tiny base model."""
    if report:
        payload = json.loads(Path(report).read_text())
        tasks = payload.get("baseline", payload)["tasks"]
    else:
        from flywheel.evaluation.runner import evaluate_policy
        from flywheel.evaluation.suites import EvalConfig as Cfg
        from flywheel.models import resolve_base_model
        from flywheel.paths import FlywheelPaths
        from flywheel.tasks.suites import HELDOUT_SIZE

        base = resolve_base_model("tiny-v1", FlywheelPaths(home=home))
        cfg = Cfg(n_samples=samples, temperature=0.7, tasks_per_domain=dict(HELDOUT_SIZE), greedy=False)
        tasks = evaluate_policy(str(base.path), cfg, model="tiny-v1").to_dict()["tasks"]
    out: dict[str, list[float]] = {}
    for t in tasks:
        n = len(t["passed"])
        out.setdefault(t["domain"], []).append((sum(t["passed"]) + 0.5) / (n + 1))  # never exactly 0 or 1
    return {d: np.array(v) for d, v in out.items()}


def shift_to_gain(rates: dict[str, np.ndarray], gain: float) -> dict[str, np.ndarray]:
    """Rates moved by one logit shift (found by bisection) so the pooled mean rises by `gain`."""
    flat = np.concatenate(list(rates.values()))
    logit = {d: np.log(r / (1 - r)) for d, r in rates.items()}
    lo, hi = 0.0, 10.0
    for _ in range(60):
        mid = (lo + hi) / 2
        mean = np.concatenate([1 / (1 + np.exp(-(x + mid))) for x in logit.values()]).mean()
        lo, hi = (mid, hi) if mean - flat.mean() < gain else (lo, mid)
    return {d: 1 / (1 + np.exp(-(x + lo))) for d, x in logit.items()}


def draw(model: str, rates: dict[str, np.ndarray], design: Design, picks: dict[str, np.ndarray],
         rng: np.random.Generator, cfg: EvalConfig) -> EvalReport:
    """One evaluation: the design's tasks (measured tasks resampled to its size), each sampled `samples` times."""
    tasks = []
    for d, idx in picks.items():
        outcomes = rng.random((idx.size, design.samples)) < rates[d][idx][:, None]
        tasks += [TaskResult(f"{d}-{i}", d, tuple(row), 1.0, 0, 0, 0.0, 0.0) for i, row in enumerate(outcomes)]
    return EvalReport(model, cfg, tasks)


def point_rule(c: Comparison) -> bool:
    """The gate before this one: overall point estimate > 0 and no domain's point estimate below -0.05."""
    return c.diffs["overall"].value > 0 and not any(
        e.value < -0.05 for d, e in c.diffs.items() if d != "overall" and e.n)


def promotion_rate(design: Design, champ: dict[str, np.ndarray], cand: dict[str, np.ndarray],
                   sims: int, seed: int) -> float:
    promoted = 0
    for s in range(sims):
        rng = np.random.default_rng([seed, s])
        cfg = EvalConfig(n_samples=design.samples, seed=int(rng.integers(1 << 31)), tasks_per_domain={})
        picks = {d: (np.arange(n) if n <= champ[d].size else rng.integers(0, champ[d].size, n))
                 for d, n in design.tasks.items() if d in champ}
        c = compare(draw("cand", cand, design, picks, rng, cfg), draw("champ", champ, design, picks, rng, cfg))
        promoted += decide(c, GateConfig())[0] if design.rule == "gate" else point_rule(c)
    return promoted / sims


def wilson(k: float, n: int) -> tuple[float, float]:
    z, p = 1.96, k
    den = 1 + z * z / n
    mid, half = (p + z * z / (2 * n)) / den, z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return round(float(mid - half), 3), round(float(mid + half), 3)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                 allow_abbrev=False)
    ap.add_argument("--sims", type=int, default=1000, help="simulated turns per scenario")
    ap.add_argument("--samples", type=int, default=EvalConfig().n_samples,
                    help="samples per task of the gate's evaluation (default: EvalConfig's)")
    ap.add_argument("--tasks", default=None, help="gate's held-out tasks per domain, e.g. math=200,code=60 "
                                                  "(default: what a default evaluation really scores)")
    ap.add_argument("--report", default=None, help="report.json to read per-task rates from (default: measure)")
    ap.add_argument("--home", default=None, help="flywheel home for the measured base model (default: a temp dir)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    home = Path(args.home) if args.home else Path(tempfile.mkdtemp(prefix="bench-gate-"))
    champ = measured_rates(args.report, args.samples, home)
    measure_s = time.perf_counter() - t0
    cand = shift_to_gain(champ, GAIN)
    sizes = ({d: int(n) for d, n in (kv.split("=") for kv in args.tasks.split(","))} if args.tasks
             else {d: len(ts) for d, ts in eval_tasks(EvalConfig()).items()})
    gate = Design("gate", sizes, args.samples, "gate")
    old = Design("previous", {"math": 60, "code": 24, "agent": 24}, 4, "point")
    print(f"per-task rates measured on {sum(r.size for r in champ.values())} held-out tasks in {measure_s:.0f}s; "
          f"mean pass@1 {np.concatenate(list(champ.values())).mean():.3f} "
          + ", ".join(f"{d} {r.mean():.3f} ({r.size})" for d, r in champ.items()))
    figures: dict[str, object] = {"sims": args.sims, "gate_tasks": sizes, "gate_samples": args.samples,
                                  "gain_simulated": GAIN}
    for design, key in ((gate, ""), (old, "previous_")):
        t = time.perf_counter()
        null = promotion_rate(design, champ, champ, args.sims, args.seed)
        power = promotion_rate(design, champ, cand, args.sims, args.seed + 1)
        figures.update({f"{key}null_promotion_rate": round(null, 4), f"{key}null_ci": wilson(null, args.sims),
                        f"{key}power_at_5pts": round(power, 4), f"{key}power_ci": wilson(power, args.sims)})
        print(f"{design.name:9s} ({'/'.join(map(str, design.tasks.values()))} tasks x {design.samples}): "
              f"promotes an identical model {null:6.1%} {wilson(null, args.sims)}, "
              f"a +5-point model {power:6.1%} {wilson(power, args.sims)}   [{time.perf_counter() - t:.0f}s]")
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
