"""The rollback rule under simulated daily live traffic: how often it rolls back a champion that keeps its
promise, and how many days it takes to roll back one that dropped 10 points.

Each simulated champion serves `--records` judged requests a day in the default traffic mix (math 0.40,
code 0.35, agent 0.25) with promised pass rates math 0.70, code 0.75, agent 0.30. The promise is what the
rollback sensor reads from the registry: the evaluation's per-domain 95 % lower bound, here from a simulated
evaluation of 200 / 24 / 60 tasks x 8 samples with a spread of task difficulty (`--exact-promise`: the true
rates instead). The unchanged champion passes live exactly at its true rate for
`--days` days; the dropped one keeps it for `--drop-day` days, then loses 10 points in every domain (users
who changed what they ask). The sensor's real `decide_rollback` runs after every day on everything seen so
far, as the sensor does. The last line is one JSON object of the figures.

    python benchmarks/bench_rollback.py [--sims 1000] [--records 3000] [--days 30] [--drop-day 3] [--exact-promise]
        [--alpha 0.05] [--margin 0.02]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

from flywheel.monitoring.sequential import LiveCounts, RollbackConfig, decide_rollback

MIX = {"math": 0.40, "code": 0.35, "agent": 0.25}
TRUE = {"math": 0.70, "code": 0.75, "agent": 0.30}
EVAL_TASKS = {"math": 200, "code": 24, "agent": 60}
BOOTSTRAP = 1000


def _promise(rng: np.random.Generator, noisy: bool) -> dict[str, float]:
    """What the registry holds as the promise: the true rates (`noisy` False), or what the deploy step records
    from a simulated evaluation: per domain the 95 % bootstrap lower bound over tasks of pass@1."""
    if not noisy:
        return dict(TRUE)
    out = {}
    for d, p in TRUE.items():
        per_task = rng.beta(2 * p / (1 - p), 2, size=EVAL_TASKS[d])  # mean p, difficulty spread per task
        frac = rng.binomial(8, per_task) / 8
        boots = frac[rng.integers(0, len(frac), size=(BOOTSTRAP, len(frac)))].mean(axis=1)
        out[d] = float(np.quantile(boots, 0.025))
    return out


def _first_rollback(rng: np.random.Generator, cfg: RollbackConfig, records: int, days: int,
                    drop_day: int | None, noisy: bool) -> int | None:
    """The day (1-based) the rule first rolls back, or None within `days`."""
    promise = _promise(rng, noisy)
    seen: list[LiveCounts] = []
    for day in range(1, days + 1):
        drop = 0.10 if drop_day is not None and day > drop_day else 0.0
        n = rng.multinomial(records, list(MIX.values()))
        for (d, p), k in zip(TRUE.items(), n, strict=True):
            seen.append(LiveCounts(f"d{day:03d}", d, int(k), int(rng.binomial(k, max(0.0, p - drop)))))
        if decide_rollback(seen, promise, cfg).rollback:
            return day
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sims", type=int, default=1000)
    ap.add_argument("--records", type=int, default=3000, help="judged live requests a day")
    ap.add_argument("--days", type=int, default=30, help="days each champion is watched")
    ap.add_argument("--drop-day", type=int, default=3, help="days served before the 10-point drop")
    ap.add_argument("--exact-promise", action="store_true",
                    help="the promise is the true rate (default: a simulated evaluation's lower bound)")
    ap.add_argument("--alpha", type=float, default=RollbackConfig().alpha)
    ap.add_argument("--margin", type=float, default=RollbackConfig().margin)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    cfg = RollbackConfig(alpha=args.alpha, margin=args.margin)
    rng = np.random.default_rng(args.seed)
    t0 = time.perf_counter()
    null = [_first_rollback(rng, cfg, args.records, args.days, None, not args.exact_promise) for _ in range(args.sims)]
    drop = [_first_rollback(rng, cfg, args.records, args.days, args.drop_day, not args.exact_promise)
            for _ in range(args.sims)]
    false_rate = sum(d is not None for d in null) / args.sims
    early = sum(d is not None and d <= args.drop_day for d in drop)  # before the drop: a false rollback too
    delays = [d - args.drop_day for d in drop if d is not None and d > args.drop_day]
    figures = {
        "false_rollback_rate": round(false_rate, 4),
        "false_rollback_ci95": round(1.96 * (false_rate * (1 - false_rate) / args.sims) ** 0.5, 4),
        "days_to_rollback_at_10pts": statistics.median(delays) if delays else None,
        "days_to_rollback_p90": float(np.percentile(delays, 90)) if delays else None,
        "rolled_back_within_horizon": round(len(delays) / args.sims, 4), "rolled_back_before_drop": early,
        "records_per_day": args.records, "days": args.days, "drop_day": args.drop_day, "sims": args.sims,
        "promise": "exact" if args.exact_promise else "eval_lower_bound", "alpha": cfg.alpha, "margin": cfg.margin, "seconds": round(time.perf_counter() - t0, 1),
    }
    print(f"unchanged champion over {args.days} days: rolled back in {false_rate:.2%} of {args.sims} histories "
          f"(alpha {cfg.alpha})")
    print(f"10-point drop after day {args.drop_day}: median {figures['days_to_rollback_at_10pts']} day(s) to "
          f"roll back (p90 {figures['days_to_rollback_p90']}), {len(delays)}/{args.sims} within the horizon")
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
