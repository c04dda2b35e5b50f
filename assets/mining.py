"""`failure_cases` (pass rates, failure taxonomy, difficulty history) and `task_pool` (the curriculum).

Library: `flywheel.mining`. Both assets read/write the warehouse through the `storage` resource.
"""

import dagster as dg

from flywheel.mining import MiningConfig, build_task_pool, mine_failures
from flywheel.mining.pool_runs import pool_log_partitions
from flywheel_dagster.assets.config import config_class
from flywheel_dagster.resources.storage import StorageResource

OWNERS = ["team:flywheel-data"]


MiningRunConfig = config_class(MiningConfig, "MiningRunConfig", "What mining does (`.to_lib()` -> "
                               "flywheel.mining.MiningConfig: defaults, help and ranges are declared there).",
                               module=__name__)


def _md_counts(counts: dict[str, int], head: tuple[str, str]) -> str:
    rows = [f"| {head[0]} | {head[1]} |", "| --- | --- |", *(f"| {k} | {v} |" for k, v in sorted(counts.items()))]
    return "\n".join(rows)


@dg.asset(deps=["task_logs"], group_name="mining", owners=OWNERS, kinds={"duckdb"},
          description="One row per failing log record with its failure class (wrong answer, format error, runtime "
                      "error, timeout, invalid tool call, refused), exception type and normalized traceback "
                      "signature; also writes task_stats / domain_stats (pass rates per model), failure_summary, "
                      "failure_signatures and upserts difficulty_history.")
def failure_cases(context: dg.AssetExecutionContext, config: MiningRunConfig,
                  storage: StorageResource) -> dg.MaterializeResult:
    with storage.warehouse() as con:
        r = mine_failures(con, config.to_lib())
    context.log.info(f"mined {r.failures} failures of {r.judged} judged records in {r.seconds:.2f}s")
    return dg.MaterializeResult(metadata={
        "dagster/row_count": r.failures, "records": r.records, "judged": r.judged, "passes": r.passes,
        "pass_rate": dg.MetadataValue.float(round(r.passes / r.judged, 4) if r.judged else 0.0),
        "failures_by_domain_and_type": dg.MetadataValue.md(r.markdown()),
        "traceback_signatures": r.signatures, "tasks": r.tasks, "models": ", ".join(r.models),
        "difficulty_history_rows": r.history_rows, "seconds": dg.MetadataValue.float(round(r.seconds, 3)),
    })


@dg.asset(deps=[failure_cases], group_name="mining", owners=OWNERS, kinds={"duckdb"},
          description="The learnable frontier of the current model, ranked: tasks it sometimes solves and sometimes "
                      "fails, plus failures whose reference makes a verifier possible; decontaminated against the "
                      "held-out eval sets, near-duplicate prompts removed, difficulty = Beta-posterior fail rate.")
def task_pool(context: dg.AssetExecutionContext, config: MiningRunConfig,
              storage: StorageResource) -> dg.MaterializeResult:
    with storage.warehouse() as con:
        r = build_task_pool(con, config.to_lib())
        log_partitions = pool_log_partitions(con, r.models)
    context.log.info(f"task_pool: {r.pool} tasks mined from {', '.join(r.models) or 'no model'} ({r.decontaminated} decontaminated, "
                     f"{r.near_duplicates} near-duplicates)")
    return dg.MaterializeResult(metadata={
        "dagster/row_count": r.pool, "model": r.model or "", "candidates": r.candidates,
        "decontaminated": r.decontaminated, "near_duplicates_removed": r.near_duplicates,
        "pool_by_domain": dg.MetadataValue.md(_md_counts(r.pool_by_domain, ("domain", "tasks"))),
        "models": ", ".join(r.models),
        "pool_counts": dg.MetadataValue.json({"by_domain": dict(r.pool_by_domain), "model": r.model or "",
                                              "models": r.models, "by_model": dict(r.pool_by_model)}),
        "pool_by_reason": dg.MetadataValue.md(_md_counts(r.reasons, ("reason", "tasks"))),
        "heldout_prompts": r.heldout_prompts, "seconds": dg.MetadataValue.float(round(r.seconds, 3)),
        "log_partitions": dg.MetadataValue.json(log_partitions),
    })


@dg.asset_check(asset=task_pool, description="Every domain that has failures with a reference contributes tasks to "
                "the pool: a domain with failures but an empty pool means mining (or its thresholds) lost it.")
def task_pool_covers_domains(storage: StorageResource) -> dg.AssetCheckResult:
    from flywheel.mining.pool_runs import pool_coverage

    with storage.warehouse() as con:
        cov = pool_coverage(con)
    missing = sorted(d for d, (fails, pooled) in cov.items() if fails and not pooled)
    return dg.AssetCheckResult(passed=bool(cov) and not missing, metadata={
        "domains_missing": ", ".join(missing) or "none",
        "coverage": dg.MetadataValue.md(
            "| domain | failing tasks with reference | pool |\n| --- | --- | --- |\n"
            + "\n".join(f"| {d} | {f} | {p} |" for d, (f, p) in sorted(cov.items()))),
    })


@dg.asset_check(asset=task_pool, description="No pool prompt overlaps a held-out evaluation prompt (n-gram "
                "containment at the configured threshold): training must never see the eval sets.")
def task_pool_decontaminated(config: MiningRunConfig, storage: StorageResource) -> dg.AssetCheckResult:
    from flywheel.mining.pool import contaminated_pool_tasks

    with storage.warehouse() as con:
        bad, dropped = contaminated_pool_tasks(con, config.to_lib())
    return dg.AssetCheckResult(passed=not bad, metadata={
        "contaminated_in_pool": len(bad), "examples": ", ".join(bad[:10]) or "none",
        "dropped_by_mining": dropped})


ASSETS = [failure_cases, task_pool]
CHECKS = [task_pool_covers_domains, task_pool_decontaminated]
