"""`raw_task_logs` (one day of raw logs ingested) and `task_logs` (the cleaned table) with checks.

How they relate: materializing a `raw_task_logs` partition ingests that day's raw files (local
folder or any URI: `StorageResource.raw_logs_uri`) into the warehouse: clean rows land in `task_logs`
(stamped `log_date` = the partition), bad lines in `quarantine`. The `task_logs` asset is the
cleaned table as a whole: it summarizes it and its checks guard everything downstream.
"""

import dataclasses
from collections.abc import Iterator

import dagster as dg
from pydantic import Field

from flywheel.logs.options import IngestOptions
from flywheel.logs.schema import KNOWN_DOMAINS
from flywheel_dagster.assets.partitions import daily_logs
from flywheel_dagster.assets.traffic import production_traffic
from flywheel_dagster.resources.storage import WAREHOUSE_POOL, StorageResource

OWNERS = ["team:flywheel-data"]


def _report_metadata(report, source: str) -> dict:
    from flywheel.logs.summary import markdown_table

    reasons = sorted(report.by_reason.items(), key=lambda kv: -kv[1])
    return {
        "source": dg.MetadataValue.path(source),
        "lines_read": report.lines_read,
        "ingested": report.ingested,
        "quarantined": report.quarantined,
        "duplicates": report.duplicates,
        "redactions": report.redactions,
        "quarantine_rate": dg.MetadataValue.float(round(report.quarantine_rate, 6)),
        "quarantine_by_reason": dg.MetadataValue.md(markdown_table(reasons, ("reason", "lines")) if reasons else "none"),
        "rows_per_s": dg.MetadataValue.float(round(report.lines_read / report.seconds, 1) if report.seconds else 0.0),
        "run_id": report.run_id,
    }


def _ingest_default(name: str) -> tuple[object, str]:
    """`IngestOptions.<name>`'s default and help: the library declares them once."""
    spec = next(f for f in dataclasses.fields(IngestOptions) if f.name == name)
    return spec.default, spec.metadata["help"]


class RawLogsConfig(dg.Config):
    """How strict ingest is with one day's raw logs, and which export format they are in."""

    max_field_mib: float = Field(default=_ingest_default("max_field_bytes")[0] / 2**20, gt=0, allow_inf_nan=False,
                                 description=_ingest_default("max_field_bytes")[1] + " (MiB)")
    format: str = Field(default=_ingest_default("format")[0], description=_ingest_default("format")[1])


@dg.asset(
    partitions_def=daily_logs,
    deps=[production_traffic],
    output_required=False,
    group_name="logs",
    owners=OWNERS,
    kinds={"duckdb", "parquet"},
    pool=WAREHOUSE_POOL,
    description="One day of raw task logs (JSONL/Parquet at the log source) validated, redacted, deduplicated "
    "and loaded into the warehouse; bad lines go to `quarantine` with their reason. A day without logs is "
    "a skip, not a failure: nothing is materialized, the steps after it skip, and an observation says why.",
)
def raw_task_logs(
    context: dg.AssetExecutionContext, config: RawLogsConfig, storage: StorageResource
) -> Iterator[dg.MaterializeResult | dg.AssetObservation]:
    from flywheel.logs.ingest import ingest
    from flywheel.progress import progress_bar

    day = context.partition_key
    uri = storage.raw_logs_for(day)
    bar = progress_bar(0, f"ingesting the raw logs of {day}", unit=" lines")  # lines read so far, with rate
    try:
        with storage.warehouse() as con:
            report = ingest(uri, con, log_date=day, progress=bar.update,
                            options=IngestOptions(max_field_bytes=int(config.max_field_mib * 2**20),
                                                  format=config.format))
        bar.close()
    except FileNotFoundError as e:  # nothing to do today: a skip (the run succeeds), not a failed asset
        reason = f"no raw logs for {day}: {e} (set storage.raw_logs_uri to where your logs are)"
        context.log.warning(f"skipped: {reason}")
        yield dg.AssetObservation(asset_key=context.asset_key, partition=day,
                                  metadata={"skipped": reason, "source": dg.MetadataValue.path(uri)})
        return
    yield dg.MaterializeResult(metadata=_report_metadata(report, uri))


@dg.asset(
    deps=[raw_task_logs],
    group_name="logs",
    owners=OWNERS,
    kinds={"duckdb"},
    pool=WAREHOUSE_POOL,
    description="The cleaned task-log table (all days): only valid, redacted, deduplicated records. "
    "Mining reads it; its checks guard everything downstream.",
)
def task_logs(storage: StorageResource) -> dg.MaterializeResult:
    from flywheel.logs.summary import summarize

    with storage.warehouse() as con:
        s = summarize(con)
    md = {k: dg.MetadataValue.md(s.pop(k)) for k in ("by_domain_md", "quarantine_by_reason_md")}
    s["quarantine_rate"] = dg.MetadataValue.float(round(s["quarantine_rate"], 6))
    return dg.MaterializeResult(
        metadata={**{k: v for k, v in s.items() if v is not None}, "by_domain": md["by_domain_md"],
                  "quarantine_by_reason": md["quarantine_by_reason_md"], "dagster/row_count": s["rows"]}
    )


@dg.asset_check(asset=task_logs, pool=WAREHOUSE_POOL, description="Every row has a task_id (mining groups by it).")
def task_logs_no_null_task_id(storage: StorageResource) -> dg.AssetCheckResult:
    from flywheel.logs.summary import null_task_ids

    with storage.warehouse() as con:
        n = null_task_ids(con)
    return dg.AssetCheckResult(passed=n == 0, metadata={"rows_without_task_id": n})


@dg.asset_check(asset=task_logs, pool=WAREHOUSE_POOL, description=f"Every domain is one a verifier handles: {', '.join(KNOWN_DOMAINS)}. "
                "Unknown domains are kept (not quarantined); this warns so someone adds a verifier or fixes the logger.")
def task_logs_known_domains(storage: StorageResource) -> dg.AssetCheckResult:
    from flywheel.logs.summary import markdown_table, unknown_domains

    with storage.warehouse() as con:
        unknown = unknown_domains(con)
    return dg.AssetCheckResult(
        passed=not unknown, severity=dg.AssetCheckSeverity.WARN,
        metadata={"unknown_domain_rows": sum(unknown.values()),
                  "unknown_domains": dg.MetadataValue.md(markdown_table(list(unknown.items()), ("domain", "rows"))
                                                         if unknown else "none")},
    )


class QuarantineRateConfig(dg.Config):
    """The share of quarantined input lines above which the check fails."""

    max_quarantine_rate: float = Field(default=0.05, ge=0, le=1, description="the day's (and a file's) largest "
                                       "share of quarantined lines")
    min_file_lines: int = Field(default=20, ge=1, description="files with fewer lines are not judged on their own")


def _run_day(context: dg.AssetCheckExecutionContext) -> str | None:
    """The log day the run materialized (the daily job's partition), or None for an unpartitioned run."""
    return context.run.tags.get("dagster/partition")


@dg.asset_check(asset=task_logs, pool=WAREHOUSE_POOL, description="Quarantined lines / all distinct lines of the "
                "day the run ingested stays under `max_quarantine_rate` (default 5%): a higher rate means the "
                "logger or the schema broke. Judged per day (a bad day is not diluted by good ones) and per "
                "file (the worst files are listed; a file over the rate with enough lines fails it too).")
def task_logs_quarantine_rate(context: dg.AssetCheckExecutionContext, config: QuarantineRateConfig,
                              storage: StorageResource) -> dg.AssetCheckResult:
    from flywheel.logs.summary import markdown_table, quarantine_by_file, quarantine_rate

    day = _run_day(context)
    with storage.warehouse() as con:
        q, files, overall = quarantine_rate(con, day), quarantine_by_file(con, day), quarantine_rate(con)
    bad = [(f, n, c) for f, n, c in files if n + c >= config.min_file_lines and n / (n + c) > config.max_quarantine_rate]
    rows = [(f, n, c, f"{n / max(n + c, 1):.1%}") for f, n, c in files[:10]]
    return dg.AssetCheckResult(
        passed=q.rate <= config.max_quarantine_rate and not bad,
        metadata={"day": day or "all days", "quarantine_rate": dg.MetadataValue.float(round(q.rate, 6)),
                  "quarantined": q.quarantined, "clean_rows": q.clean, "files_over_rate": len(bad),
                  "all_days_rate": dg.MetadataValue.float(round(overall.rate, 6)),
                  "threshold": dg.MetadataValue.float(config.max_quarantine_rate),
                  "worst_files": dg.MetadataValue.md(markdown_table(rows, ("file", "quarantined", "clean", "rate"))
                                                     if rows else "none")},
    )


ASSETS = [raw_task_logs, task_logs]
CHECKS = [task_logs_no_null_task_id, task_logs_known_domains, task_logs_quarantine_rate]
