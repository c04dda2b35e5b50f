"""`flywheel_history`: pass@1 per domain per turn, with the turns where the champion moved.

Not partitioned: it reads the whole registry, whatever base model a turn trained, and each materialization is
one point of the Dagster UI's Plots tab (champion pass@1 overall and per domain, turns, promotions, rollbacks),
so the tab charts the flywheel turn by turn instead of one dot for the base-model partition.
"""

import base64

import dagster as dg

from flywheel_dagster.resources.storage import StorageResource


@dg.asset(
    deps=["deployed_model", "canary"], group_name="deployment", kinds={"mlflow"},
    description="The flywheel's history from the registry: for every turn, the champion's and the candidate's "
                "pass@1 per domain from that turn's shared evaluation, whether the champion moved, its live "
                "canary, and whether the rollback sensor later moved it back (and why). One materialization per "
                "turn: the Plots tab charts the champion's pass@1 turn by turn.",
)
def flywheel_history(storage: StorageResource) -> dg.MaterializeResult:
    from flywheel.registry.history import history_markdown, history_png, load_history

    records = load_history(storage.paths().mlflow_uri)
    png = base64.b64encode(history_png(records)).decode() if records else ""
    chart = f"\n\n![pass@1 per turn](data:image/png;base64,{png})" if png else ""
    last = records[-1] if records else None
    champion = (last.after if last.promoted else last.before) if last else {}
    return dg.MaterializeResult(metadata={
        "champion_overall_pass@1": champion.get("overall", float("nan")),
        **{f"champion_pass@1/{d}": float(v) for d, v in sorted(champion.items()) if d != "overall"},
        "turns": len(records), "promotions": sum(r.promoted for r in records),
        "rollbacks": sum(bool(r.rolled_back) for r in records),
        "history": dg.MetadataValue.md(history_markdown(records) + chart),
    })


ASSETS = [flywheel_history]
