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
    p.add_argument("source", metavar="PATH_OR_URI", help="log file, folder of log files, or filesystem URI")
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
    from flywheel.logs.sources import list_sources

    try:
        list_sources(args.source)
    except FileNotFoundError as e:
        return fail(str(e))
    except (OSError, ValueError) as e:  # unknown URI scheme, no credentials, ...
        return fail(f"cannot open {args.source}: {e}")
    warehouse = args.warehouse or str(storage_from_env().warehouse)
    bar, progress = _progress(sys.stderr.isatty() and not args.json)
    options = IngestOptions(max_field_bytes=int(args.max_field_mib * 2**20), format=args.format)
    try:
        report = ingest(args.source, warehouse, log_date=args.log_date, options=options, progress=progress)
    finally:
        if bar is not None:
            bar.close()
    over = report.quarantine_rate > args.max_quarantine_rate
    result = {**report.to_dict(), "warehouse": warehouse, "max_quarantine_rate": args.max_quarantine_rate,
              "quarantine_rate_exceeded": over}
    reasons = ", ".join(f"{k} {v:,}" for k, v in sorted(report.by_reason.items(), key=lambda kv: -kv[1]))
    text = (
        f"read {report.lines_read:,} lines from {report.files} file(s) in {report.seconds:.1f} s\n"
        f"  ingested    {report.ingested:,}\n"
        f"  quarantined {report.quarantined:,}" + (f"  ({reasons})" if reasons else "") + "\n"
        f"  duplicates  {report.duplicates:,}\n"
        f"  redactions  {report.redactions:,}"
        + (f"  ({', '.join(f'{k} {v:,}' for k, v in report.redactions_by_kind.items())})" if report.redactions else "")
        + f"\nwarehouse: {warehouse}"
        + (f"\nquarantined lines: SELECT source_file, source_line, reason FROM quarantine WHERE run_id = '{report.run_id}'"
           if report.quarantined else "")
    )
    emit(args, result, text)
    if over:
        return fail(f"{report.quarantined:,} of {report.lines_read:,} records quarantined "
                    f"({report.quarantine_rate:.1%}), over --max-quarantine-rate {args.max_quarantine_rate:.1%}; "
                    f"see the quarantine table (run_id {report.run_id})", QUARANTINE_EXIT)
    return 0
