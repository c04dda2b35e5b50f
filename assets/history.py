"""`flywheel_history`: pass@1 per domain per turn, with the turns where the champion moved."""

import base64

import dagster as dg

from flywheel_dagster.assets.partitions import base_models
from flywheel_dagster.resources.storage import StorageResource


@dg.asset(
    partitions_def=base_models, deps=["deployed_model", "canary"], group_name="deployment", kinds={"mlflow"},
    description="The flywheel's history from the registry: for every turn, the champion's and the candidate's "
                "pass@1 per domain from that turn's shared evaluation, whether the champion moved, its live "
                "canary, and whether the rollback sensor later moved it back (and why).",
)
def flywheel_history(storage: StorageResource) -> dg.MaterializeResult:
    from flywheel.registry.history import history_markdown, history_png, load_history

    records = load_history(storage.paths().mlflow_uri)
    png = base64.b64encode(history_png(records)).decode() if records else ""
    chart = f"\n\n![pass@1 per turn](data:image/png;base64,{png})" if png else ""
    last = records[-1] if records else None
    return dg.MaterializeResult(metadata={
        "turns": len(records), "promotions": sum(r.promoted for r in records),
        "rollbacks": sum(bool(r.rolled_back) for r in records),
        "history": dg.MetadataValue.md(history_markdown(records) + chart),
        "champion_overall_pass@1": (last.after if last and last.promoted else last.before if last else {})
        .get("overall", float("nan")),
    })


ASSETS = [flywheel_history]
