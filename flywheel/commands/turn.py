"""`flywheel turn`: one whole flywheel turn on the embedded defaults (what `make flywheel` runs).

The turn runs the project's Dagster jobs (the `assets` code location beside this package),
so it must run from the project root: `make flywheel` does.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from flywheel.commands.output import add_json_flag, emit, fail


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("turn", help="run one whole flywheel turn and print before/after evaluation",
                       description=__doc__)
    p.add_argument("--day", help="log day YYYY-MM-DD (default: the day after the newest raw-log folder)")
    p.add_argument("--base-model", default="tiny-v1", help="base-model partition (release name or checkpoint)")
    p.add_argument("--records", type=int, default=3000, help="production requests served for the day")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--train-budget", type=float, default=180.0, metavar="S",
                   help="wall-clock cap in seconds of the RL run inside the turn (0: no cap)")
    p.add_argument("--log-level", default="WARNING", help="Dagster log level of the turn's runs (INFO shows each step)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="ASSET.FIELD=VALUE",
                   help="override an asset's config for this turn, e.g. --set rlvr_policy.steps=20 "
                        "--set eval_report.tasks_math=40 (repeatable)")
    add_json_flag(p)
    p.set_defaults(func=run)


def format_summary(s: dict) -> str:
    domains = [d for d in s["eval_after"] if d != "overall"] + ["overall"]
    lines = [f"flywheel turn for {s['day']} on base model {s['base_model']} "
             f"(traffic served by {s['traffic_served_by']})", "",
             f"{'domain':<10}{'before':>10}{'after':>10}{'diff':>10}"]
    for d in domains:
        b, a = s["eval_before"].get(d, float("nan")), s["eval_after"].get(d, float("nan"))
        lines.append(f"{d:<10}{b:>10.3f}{a:>10.3f}{a - b:>+10.3f}")
    lines += ["", f"promoted: {'yes' if s['promoted'] else 'no'} — {s['reason']}",
              f"champion: {s.get('champion_after')}", f"report: {s.get('report_dir')}"]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        from assets.turn import TurnConfig, run_turn
    except ModuleNotFoundError as e:
        if e.name in ("assets", "assets.turn"):
            return fail("`flywheel turn` runs the project's Dagster code location: run it from the project root")
        raise
    from assets.turn import TurnDayError, parse_override

    overrides: dict[str, dict] = {}
    try:
        for text in args.overrides:
            asset, name, value = parse_override(text)
            overrides.setdefault(asset, {})[name] = value
    except ValueError as e:
        return fail(str(e))
    t0 = time.perf_counter()
    quiet = args.json

    def progress(msg: str) -> None:
        if not quiet:
            print(msg, flush=True)

    try:  # run_turn checks the day before it writes anything
        summary = run_turn(TurnConfig(day=args.day, base_model=args.base_model, records=args.records,
                                      seed=args.seed, train_budget_s=args.train_budget, overrides=overrides),
                           progress=progress, log_level=args.log_level.upper())
    except TurnDayError as e:
        return fail(str(e))
    summary["wall_s"] = round(time.perf_counter() - t0, 1)
    emit(args, summary, format_summary(summary) + f"\n\nturn took {summary['wall_s']} s")
    return 0
