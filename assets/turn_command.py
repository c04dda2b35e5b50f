"""`flywheel turn`: one whole flywheel turn on the embedded defaults (what `make flywheel` runs).

The command belongs to the Dagster code location (it drives the jobs of `flywheel_dagster.assets`), so the
code location contributes it to the `flywheel` CLI through the `flywheel.commands` entry point: the library's
CLI knows nothing of Dagster, and the command works from any folder once the project is installed.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from flywheel.commands.argtypes import positive_int
from flywheel.commands.output import EXIT_FAILED, add_json_flag, emit, exit_code_for, fail
from flywheel.config_fields import ConfigHelpFormatter, Range, add_flags, bounded, from_args
from flywheel_dagster.assets.turn_config import TurnConfig

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("turn", help="run one whole flywheel turn and print before/after evaluation",
                       description=__doc__, formatter_class=ConfigHelpFormatter)
    p.add_argument("--day", help="log day YYYY-MM-DD of the (first) turn (default: the day after the newest "
                                 "raw-log folder; with none and --turns N, N-1 days before today)")
    p.add_argument("--turns", type=positive_int, default=1, metavar="N",
                   help="run N turns on consecutive days; prints the history (pass@1 per turn) at the end")
    add_flags(p, TurnConfig, exclude=("day", "overrides"))
    p.add_argument("--train-budget", dest="train_budget_s", type=bounded(float, Range(low=0.0)),
                   help=argparse.SUPPRESS)  # the flag's name before 2026-12-05
    p.add_argument("--log-level", default="WARNING", type=str.upper, choices=LOG_LEVELS,
                   help="Dagster log level of the turn's runs (INFO shows each step; a failed turn's traceback "
                        "is printed from DEBUG and INFO)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="ASSET.FIELD=VALUE",
                   help="override an asset's (or a resource's) config for this turn, e.g. --set rlvr_policy.rft_steps=200 "
                        "--set eval_report.tasks_math=40 (repeatable; VALUE is read as JSON, else as text). "
                        "Every override is checked against the jobs' config before anything is written.")
    add_json_flag(p)
    p.set_defaults(func=run)


def format_data_side(s: dict) -> str:
    """What the turn did with the day's logs: their source, ingest's counts, the pool, and failed checks."""
    d = s.get("data") or {}
    rate = d.get("quarantine_rate")
    pool = ", ".join(f"{k} {v}" for k, v in sorted((d.get("pool_by_domain") or {}).items())) or "empty"
    lines = [f"data side of {s['day']}: logs {d.get('logs_from')}",
             f"  read {d.get('lines_read')} lines: ingested {d.get('ingested')}, quarantined {d.get('quarantined')}"
             + (f" ({rate:.1%})" if isinstance(rate, (int, float)) else "")
             + f", duplicates {d.get('duplicates')}, redacted {d.get('redactions')}",
             f"  task pool: {d.get('pool_size')} tasks ({pool}) mined from "
             + (", ".join(f"{m} ({n})" for m, n in sorted((d.get("pool_by_model") or {}).items()))
                or d.get("pool_model") or "no model")]
    failed = s.get("checks_failed") or []
    lines.append("  checks failed: " + ("; ".join(f"{c['severity']} {c['asset']}:{c['check']}" for c in failed)
                                        if failed else "none"))
    return "\n".join(lines)


def format_summary(s: dict) -> str:
    """The turn's before/after table: pass@1 at the serving temperature and greedy, per suite and domain."""
    from flywheel.tasks.world_suites import SUITES, suite_of

    domains = sorted(s["eval_after"], key=lambda u: (SUITES.index(suite_of(u)), u.endswith("overall")))
    gb, ga = s.get("eval_before_greedy") or {}, s.get("eval_after_greedy") or {}
    nan = float("nan")
    lines = [f"flywheel turn for {s['day']} on base model {s['base_model']} "
             f"(traffic served by {s['traffic_served_by']})", "",
             f"{'suite/domain':<20}{'before':>10}{'after':>10}{'diff':>10}"
             + (f"{'greedy before':>16}{'greedy after':>14}" if ga else "")]
    lines[1:1] = ["", format_data_side(s)] if s.get("data") else []
    for d in domains:
        b, a = s["eval_before"].get(d, nan), s["eval_after"].get(d, nan)
        row = f"{d:<20}{b:>10.3f}{a:>10.3f}{a - b:>+10.3f}"
        if ga:
            row += f"{gb.get(d, nan):>16.3f}{ga.get(d, nan):>14.3f}"
        lines.append(row)
    if s.get("eval_vs_live"):  # the canary ran: offline evaluation beside the live canary
        from flywheel.monitoring.canary import eval_vs_live_markdown

        lines += ["", f"offline gate: {(s.get('gate') or {}).get('reason', '')}",
                  "eval (held-out) vs live (canary, shadowed requests):", eval_vs_live_markdown(s["eval_vs_live"])]
    lines += ["", f"promoted: {'yes' if s['promoted'] else 'no'} — {s['reason']}",
              f"champion: {s.get('champion_after')}", f"report: {s.get('report_dir')}"]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    # Dagster loads here, not when the CLI builds its parsers: `flywheel --help` stays fast
    from flywheel.registry.history import history_markdown, load_history
    from flywheel_dagster.assets.overrides import TurnConfigError, parse_override
    from flywheel_dagster.assets.turn import DataChecksFailed, TurnDayError, run_turns


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

    if not quiet:  # long steps' progress lines (also in each Dagster step's event log) on the console
        from flywheel.progress import show_progress_lines

        show_progress_lines()

    cfg = from_args(TurnConfig, args, day=args.day, overrides=overrides)
    try:  # every turn's day and every override are checked before anything is written
        summaries = run_turns(cfg, args.turns, progress=progress, log_level=args.log_level)
    except (TurnDayError, TurnConfigError) as e:
        return fail(str(e))
    except DataChecksFailed as e:  # the data side ran; what it found is worth showing before the reason
        emit(args, {**e.summary, "error": str(e), "exit_code": EXIT_FAILED}, format_data_side(e.summary))
        return fail(str(e), EXIT_FAILED)
    except Exception as e:  # a step failed: one line here, the whole story in the Dagster UI's run
        if args.log_level in ("DEBUG", "INFO"):
            import traceback

            traceback.print_exc(file=sys.stderr)
        first = next((ln for ln in str(e).splitlines() if ln.strip()), "")
        return fail(f"the turn failed: {type(e).__name__}: {first} (the run's logs: the Dagster UI, "
                    f"$DAGSTER_HOME={os.environ.get('DAGSTER_HOME', '')}; --log-level INFO prints the traceback)",
                    exit_code_for(e))
    wall = round(time.perf_counter() - t0, 1)
    history = load_history(summaries[-1]["tracking_uri"]) if summaries[-1].get("tracking_uri") else []
    text = "\n\n".join(format_summary(s) for s in summaries)
    if len(summaries) > 1 and history:
        text += "\n\nhistory (pass@1 of champion before -> candidate after, per turn):\n" + history_markdown(history)
    out = {**summaries[-1], "wall_s": wall} if len(summaries) == 1 else {"turns": summaries, "wall_s": wall}
    out["history"] = [r.to_dict() for r in history]
    emit(args, out, text + f"\n\n{len(summaries)} turn(s) took {wall} s")
    return 0
