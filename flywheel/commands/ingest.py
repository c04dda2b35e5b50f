"""`flywheel ingest PATH_OR_URI`: load task logs into the warehouse, quarantining bad lines."""

from __future__ import annotations

import argparse
import datetime as dt
import math
import sys

from flywheel.commands.output import add_json_flag, emit, fail
from flywheel.commands.storage import storage_from_env
from flywheel.config_fields import field_specs
from flywheel.logs.options import IngestOptions

SHOW_DEFAULT = 20
"""Quarantined lines `--show-quarantine` prints when no N is given."""
QUARANTINE_EXIT = 1
"""Exit status when the run's quarantined share is over `--max-quarantine-rate` (the data was loaded;
the run is failed so a pipeline stops before mining a badly broken export). Usage errors exit 2."""


def _date(text: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"expected YYYY-MM-DD, got {text!r}") from e


def _number(text: str) -> float:
    try:
        x = float(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from e
    if not math.isfinite(x):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return x


def _positive_mib(text: str) -> float:
    x = _number(text)
    if x <= 0 or x * 2**20 < 1:
        raise argparse.ArgumentTypeError(f"expected a size in MiB above 0, got {text!r}")
    return x


def _count(text: str) -> int:
    try:
        n = int(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"expected a whole number of lines, got {text!r}") from e
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected at least 1 line, got {text!r}")
    return n


def _fraction(text: str) -> float:
    x = _number(text)
    if not 0.0 <= x <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a fraction in [0, 1], got {text!r}")
    return x


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "ingest",
        help="load JSONL/JSON/Parquet task logs into the warehouse",
        description=(
            "Load task logs (JSON Lines, JSON arrays or Parquet; the flywheel schema, OpenAI Chat Completions "
            "or ShareGPT; a file, a folder, or a URI such as file:// or s3://) into the DuckDB warehouse. "
            "Every record is normalised to the one canonical record; bad lines go to the `quarantine` table "
            "with their reason; secrets and personal data are redacted; re-ingesting the same files adds nothing."
        ),
    )
    p.add_argument("source", metavar="PATH_OR_URI", nargs="?", default=None,
                   help="log file, folder of log files, or filesystem URI (optional with --show-quarantine)")
    p.add_argument("--warehouse", metavar="FILE", default=None,
                   help="DuckDB warehouse file (default: $FLYWHEEL_HOME/warehouse.duckdb)")
    p.add_argument("--log-date", metavar="YYYY-MM-DD", type=_date, default=None,
                   help="stamp rows with this day (the daily partition); default: each record's UTC date")
    p.add_argument("--max-field-mib", metavar="MIB", type=_positive_mib, default=1.0,
                   help="quarantine records with a field larger than this (default 1)")
    fmt = next(s for s in field_specs(IngestOptions) if s.name == "format")
    p.add_argument("--format", choices=fmt.choices, default=fmt.default, help=f"{fmt.help} (default: {fmt.default})")
    p.add_argument("--max-quarantine-rate", metavar="RATE", type=_fraction, default=1.0,
                   help=f"exit {QUARANTINE_EXIT} when more than this share of the records read is quarantined "
                        "(default 1.0: never)")
    p.add_argument("--show-quarantine", metavar="N", nargs="?", type=_count, const=SHOW_DEFAULT, default=None,
                   help=f"print quarantined lines (file, line, field, why; {SHOW_DEFAULT} unless N is given): "
                        "those of the files ingested from PATH_OR_URI, else the newest in the warehouse (of "
                        "--log-date's day when given)")
    add_json_flag(p)
    p.set_defaults(func=run)


def _progress(enabled: bool):
    if not enabled:
        return None, None
    from tqdm import tqdm  # only when a bar is drawn

    bar = tqdm(unit=" rows", unit_scale=True, desc="ingest", file=sys.stderr, leave=False)
    return bar, bar.update


def run(args: argparse.Namespace) -> int:
    # duckdb and pyarrow load only when the command runs, not on every `flywheel --help`
    from flywheel.logs.ingest import ingest
    from flywheel.logs.load import stored_name
    from flywheel.logs.sources import list_sources

    warehouse = args.warehouse or str(storage_from_env().warehouse)
    if args.source is None:
        if args.show_quarantine is None:
            return fail("name the logs to ingest (PATH_OR_URI), or pass --show-quarantine to read the quarantine")
        return _show_only(args, warehouse)
    try:
        sources = list_sources(args.source)
    except FileNotFoundError as e:
        return fail(str(e))
    except (OSError, ValueError) as e:  # unknown URI scheme, no credentials, ...
        return fail(f"cannot open {args.source}: {e}")
    bar, progress = _progress(sys.stderr.isatty() and not args.json)
    options = IngestOptions(max_field_bytes=int(args.max_field_mib * 2**20), format=args.format)
    try:
        report = ingest(args.source, warehouse, log_date=args.log_date, options=options, progress=progress)
    finally:
        if bar is not None:
            bar.close()
    names = [stored_name(src.name, options.redact) for src in sources]
    files, shown, total = _after_run(warehouse, names, args.show_quarantine)
    worst = [(f, n, c) for f, n, c in files if n / (n + c) > args.max_quarantine_rate]
    unfit = [(f, n) for f, n, c in files if c == 0] if args.format != "auto" else []
    over = report.quarantine_rate > args.max_quarantine_rate or bool(worst)
    result = {**report.to_dict(), "warehouse": warehouse, "max_quarantine_rate": args.max_quarantine_rate,
              "quarantine_rate_exceeded": over,
              "files_over_rate": [{"file": f, "quarantined": n, "clean": c} for f, n, c in worst],
              "files_fitting_no_record": [f for f, _ in unfit]}
    if shown is not None:
        result["quarantine"], result["quarantine_total"] = shown, total
    reasons = ", ".join(f"{k} {v:,}" for k, v in sorted(report.by_reason.items(), key=lambda kv: -kv[1]))
    text = (
        f"read {report.lines_read:,} lines from {report.files} file(s) in {report.seconds:.1f} s\n"
        f"  ingested    {report.ingested:,}\n"
        f"  quarantined {report.quarantined:,}" + (f"  ({reasons})" if reasons else "") + "\n"
        f"  duplicates  {report.duplicates:,}\n"
        f"  redactions  {report.redactions:,}"
        + (f"  ({', '.join(f'{k} {v:,}' for k, v in report.redactions_by_kind.items())})" if report.redactions else "")
        + f"\nwarehouse: {warehouse}"
    )
    if shown is not None:
        text += "\n" + quarantine_text(shown, total)
    elif report.quarantined:
        text += f"\nwhy: flywheel ingest --show-quarantine (the newest {SHOW_DEFAULT}; N for more)"
    emit(args, result, text)
    if unfit:
        f, n = unfit[0]
        why = _first_reason(warehouse, f, report.run_id)
        more = f" (and {len(unfit) - 1} more file(s))" if len(unfit) > 1 else ""
        return fail(f"{f}: no record fits --format {args.format}{more}: all {n:,} quarantined, e.g. {why}; "
                    "--format auto detects each record's format", QUARANTINE_EXIT)
    if over:
        what = (f"{report.quarantined:,} of {report.lines_read:,} records quarantined ({report.quarantine_rate:.1%})"
                if report.quarantine_rate > args.max_quarantine_rate else
                f"{worst[0][0]}: {worst[0][1]:,} of {worst[0][1] + worst[0][2]:,} lines quarantined "
                f"({worst[0][1] / (worst[0][1] + worst[0][2]):.1%})")
        return fail(f"{what}, over --max-quarantine-rate {args.max_quarantine_rate:.1%}; "
                    "see why: flywheel ingest --show-quarantine", QUARANTINE_EXIT)
    return 0


def _after_run(warehouse: str, names: list[str], show: int | None) -> tuple[list[tuple[str, int, int]], list | None, int]:
    """The files read (`names`) with quarantined lines (file, quarantined, clean rows: judged as the warehouse
    holds them, so a re-run judges a file as the first did), and the first `show` of their quarantined lines."""
    from flywheel.logs.summary import quarantine_of_files, quarantined_lines
    from flywheel.warehouse import connect

    con = connect(warehouse, read_only=True)
    try:
        files = quarantine_of_files(con, names)
        shown, total = quarantined_lines(con, show, files=names) if show else (None, 0)
    finally:
        con.close()
    return files, shown, total


def _first_reason(warehouse: str, source_file: str, run_id: str) -> str:
    """Why the first line of `source_file` was quarantined, by run `run_id` where it stored one."""
    from flywheel.warehouse import connect

    con = connect(warehouse, read_only=True)
    try:
        row = con.execute("SELECT reason FROM quarantine WHERE source_file = ? "
                          "ORDER BY run_id = ? DESC, source_line LIMIT 1", [source_file, run_id]).fetchone()
    finally:
        con.close()
    return row[0] if row else "?"


def _show_only(args: argparse.Namespace, warehouse: str) -> int:
    """`--show-quarantine` without logs: the newest quarantined lines in the warehouse (of one day)."""
    from pathlib import Path

    from flywheel.logs.summary import quarantined_lines
    from flywheel.warehouse import connect

    if not Path(warehouse).exists():
        return fail(f"no warehouse at {warehouse} yet: ingest some logs first")
    con = connect(warehouse, read_only=True)
    try:
        day = args.log_date.isoformat() if args.log_date else None
        shown, total = quarantined_lines(con, args.show_quarantine, log_date=day)
    finally:
        con.close()
    emit(args, {"warehouse": warehouse, "log_date": day, "quarantine": shown, "quarantine_total": total},
         quarantine_text(shown, total, day))
    return 0


def quarantine_text(rows: list[dict], total: int, day: str | None = None) -> str:
    """The quarantined lines for a person: `file:line  field  why`, grouped as the query ordered them."""
    where = f" of {day}" if day else ""
    if not rows:
        return f"no quarantined lines{where}"
    head = f"quarantined lines{where}: {len(rows):,} of {total:,} shown (newest run first)"
    lines = [head]
    for r in rows:
        place = f"{_short(r['file'])}:{r['line']}"
        lines.append(f"  {place}  {r['field'] or '-'}  {_why(r['reason'])}")
    return "\n".join(lines)


def _short(path: str) -> str:
    """A file as the user typed it where it is under the working folder, else as stored."""
    import os

    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive
        return path
    return path if rel.startswith("..") or "://" in path else rel


def _why(reason: str) -> str:
    """The reason without its `line N: ` / `record N: ` prefix (the place is printed beside it)."""
    head, sep, tail = reason.partition(": ")
    word = head.split(" ")
    return tail if sep and len(word) == 2 and word[0] in ("line", "record") and word[1].isdigit() else reason
