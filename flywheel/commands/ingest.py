"""`flywheel ingest PATH_OR_URI`: load task logs into the warehouse, quarantining bad lines."""

from __future__ import annotations

import argparse
import datetime as dt
import sys

from flywheel.commands.output import add_json_flag, emit, fail
from flywheel.commands.storage import storage_from_env


def _date(text: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"expected YYYY-MM-DD, got {text!r}") from e


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "ingest",
        help="load JSONL/Parquet task logs into the warehouse",
        description=(
            "Load task logs (JSONL or Parquet; a file, a folder, or a URI such as file:// or s3://) into "
            "the DuckDB warehouse. Bad lines go to the `quarantine` table with their reason; secrets and "
            "personal data are redacted; re-ingesting the same files adds nothing."
        ),
    )
    p.add_argument("source", metavar="PATH_OR_URI", help="log file, folder of log files, or filesystem URI")
    p.add_argument("--warehouse", metavar="FILE", default=None,
                   help="DuckDB warehouse file (default: $FLYWHEEL_HOME/warehouse.duckdb)")
    p.add_argument("--log-date", metavar="YYYY-MM-DD", type=_date, default=None,
                   help="stamp rows with this day (the daily partition); default: each record's UTC date")
    p.add_argument("--max-field-mib", metavar="MIB", type=float, default=1.0,
                   help="quarantine records with a field larger than this (default 1)")
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
    from flywheel.logs.options import IngestOptions
    from flywheel.logs.sources import list_sources

    try:
        list_sources(args.source)
    except FileNotFoundError as e:
        return fail(str(e))
    except (OSError, ValueError) as e:  # unknown URI scheme, no credentials, ...
        return fail(f"cannot open {args.source}: {e}")
    warehouse = args.warehouse or str(storage_from_env().warehouse)
    bar, progress = _progress(sys.stderr.isatty() and not args.json)
    try:
        report = ingest(args.source, warehouse, log_date=args.log_date,
                        options=IngestOptions(max_field_bytes=int(args.max_field_mib * 2**20)), progress=progress)
    finally:
        if bar is not None:
            bar.close()
    result = {**report.to_dict(), "warehouse": warehouse}
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
    return 0
