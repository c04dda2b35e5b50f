"""Upstream outputs through asset metadata: a stage finds what an earlier one produced where it was recorded.

`base_model` records its checkpoint folder as `path`, `task_pool` its `log_partitions`,
`rlvr_policy` its `policy_path`, `mlflow_run_id` and `log_partitions`; later stages read them
here instead of re-deriving a location.
"""

from __future__ import annotations

from typing import Any

import dagster as dg


def latest_metadata(instance: dg.DagsterInstance, asset: str, partition: str | None = None) -> dict[str, Any]:
    """The metadata (plain values) of the latest materialization of `asset` (`partition`), {} if none."""
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[partition] if partition else None),
        limit=1).records
    if not records:
        return {}
    return {k: getattr(v, "value", v) for k, v in records[0].asset_materialization.metadata.items()}


def upstream_value(context: dg.AssetExecutionContext, asset: str, key: str, partition: str | None = None) -> Any:
    """Metadata `key` of `asset`'s latest materialization (this run's partition unless `partition`);
    fails the step, naming what to materialize, when it was never recorded."""
    part = partition if partition is not None else context.partition_key
    value = latest_metadata(context.instance, asset, part).get(key)
    if value is None:
        raise dg.Failure(f"{asset}[{part}] has recorded no `{key}`: materialize {asset} for {part} first")
    return value
