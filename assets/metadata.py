"""Upstream outputs through asset metadata: a stage finds what an earlier one produced where it was recorded.

`base_model` records its checkpoint folder as `path`, `task_pool` its `log_partitions`,
`rlvr_policy` its `policy_path`, `mlflow_run_id` and `log_partitions`; later stages read them
here instead of re-deriving a location. A folder inside the storage home is recorded relative to the home
(`home_relative`) and read back against the home of the reading run (`upstream_path`), so a home that was
moved (or mounted elsewhere) still finds its models; one outside the home stays absolute.
"""

from __future__ import annotations

import base64
from pathlib import Path
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


def home_relative(path: str | Path, home: Path) -> str:
    """`path` relative to the storage `home` when it lies inside it (what metadata records), else absolute."""
    p, root = Path(path).resolve(), home.resolve()
    return p.relative_to(root).as_posix() if p.is_relative_to(root) else str(p)


def upstream_path(context: dg.AssetExecutionContext, asset: str, key: str, home: Path) -> str:
    """The folder `asset` recorded as `key` (`upstream_value`), a relative one resolved against `home`: the
    storage home of this run, wherever the home that recorded it was."""
    p = Path(upstream_value(context, asset, key))
    return str(p if p.is_absolute() else home / p)


def policy_metadata(res: Any, log_partitions: list[str], start_label: str, home: Path) -> dict[str, Any]:
    """`rlvr_policy`'s metadata from its `TrainResult`: where the policy is, its MLflow run, the run's
    figures (steps, reward, idle shares) and the reward curve inline."""
    png = base64.b64encode(res.curve_png.read_bytes()).decode() if res.curve_png else ""
    return {
        "policy_path": dg.MetadataValue.path(home_relative(res.policy_dir, home)),
        "log_partitions": dg.MetadataValue.json(log_partitions),
        "mlflow_run_id": res.mlflow_run_id or "",
        **({"mlflow_run": dg.MetadataValue.url(res.mlflow_run_url)} if res.mlflow_run_url else {}),
        "final_reward": dg.MetadataValue.float(float(res.final_reward)),
        "trained_from": start_label, "steps": res.steps_done, "wall_s": round(res.wall_s, 1),
        "stop_reason": res.stop_reason, "lr_horizon": res.horizon, "dev_best": dg.MetadataValue.json(res.dev_best),
        "sampled": dg.MetadataValue.json(res.sources), "difficulty_rows": res.difficulty_rows,
        "reward_curve": dg.MetadataValue.md(f"![reward curve](data:image/png;base64,{png})"),
        **{k.replace("/", "_"): round(v, 4) for k, v in res.idle_shares.items()},
    }
