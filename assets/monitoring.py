"""Watching the flywheel: asset checks that alert, a sensor that delivers them, and one that rolls back.

Checks read what the stages recorded (the training run's MLflow metrics, the warehouse, evaluation and pool
metadata, the registry) and judge it with `flywheel.monitoring.signals` against `AlertThresholds` (run config
of every check, defaults declared once in the library). ERROR checks with `blocking=True` stop the steps
after them (an entropy-collapsed or reward-hacked policy is never evaluated or promoted). `alert_sensor`
sends every failed check and `run_failure_alerts` every failed run to the `alerts` resource's webhook, one
alert per incident; `champion_rollback_sensor` tests the champion's live pass rate each hour and moves the
`champion` alias back on a significant drop.
"""

import dagster as dg

from flywheel.monitoring.alerts import Alert
from flywheel.monitoring.signals import ERROR, Signal
from flywheel.monitoring.thresholds import AlertThresholds
from flywheel_dagster.assets.config import config_class
from flywheel_dagster.assets.metadata import latest_metadata
from flywheel_dagster.assets.partitions import base_models
from flywheel_dagster.resources.alerts import AlertResource, RollbackResource
from flywheel_dagster.resources.storage import WAREHOUSE_POOL, StorageResource

CHECK_CURSOR_BATCH = 200


class ThresholdsConfig(config_class(AlertThresholds, "ThresholdFields", "AlertThresholds' fields.", module=__name__)):
    """When a check fails (`.to_lib()` -> `AlertThresholds`)."""


def _result(sig: Signal, xlabel: str = "step") -> dg.AssetCheckResult:
    """A check result from a signal: severity, the sentence, the numbers and a chart of the series."""
    from flywheel.monitoring.plots import series_markdown

    md = {"message": sig.message, "value": sig.value if sig.value is not None else "n/a",
          "threshold": sig.threshold, **{k: str(v) for k, v in sig.details.items()}}
    if sig.series:
        md["chart"] = dg.MetadataValue.md(series_markdown(sig.series, sig.threshold, sig.name, xlabel))
    sev = dg.AssetCheckSeverity.ERROR if sig.severity == ERROR else dg.AssetCheckSeverity.WARN
    return dg.AssetCheckResult(passed=sig.passed, severity=sev, description=sig.message, metadata=md)


def _partition(context: dg.AssetCheckExecutionContext) -> str | None:
    """The base model this run is for (its partition tag); None (the latest of any) when the check runs alone."""
    return context.run.tags.get("dagster/partition")


def _training_history(context: dg.AssetCheckExecutionContext, storage: StorageResource) -> list[dict[str, float]]:
    """The per-step metrics of the training run behind rlvr_policy's latest materialization (this run's partition)."""
    from flywheel.monitoring.sources import run_history

    run_id = latest_metadata(context.instance, "rlvr_policy", _partition(context)).get("mlflow_run_id")
    return run_history(storage.paths().mlflow_uri, run_id) if run_id else []


@dg.asset_check(asset="rlvr_policy", blocking=True,
                description="Token entropy of the last training steps is above `min_entropy`: a collapsed "
                            "policy is not evaluated or promoted.")
def rlvr_entropy_not_collapsed(context: dg.AssetCheckExecutionContext, config: ThresholdsConfig,
                               storage: StorageResource) -> dg.AssetCheckResult:
    from flywheel.monitoring.signals import entropy_collapse

    return _result(entropy_collapse(_training_history(context, storage), config.to_lib()))


@dg.asset_check(asset="rlvr_policy",
                description="Rewards of the last training steps still vary (std above `min_reward_std`): flat, "
                            "NaN-free rewards teach nothing. ERROR, alerted, but not blocking: a run that learnt "
                            "nothing is still evaluated, and the gate keeps the champion.")
def rlvr_rewards_not_flat(context: dg.AssetCheckExecutionContext, config: ThresholdsConfig,
                          storage: StorageResource) -> dg.AssetCheckResult:
    from flywheel.monitoring.signals import reward_collapse

    return _result(reward_collapse(_training_history(context, storage), config.to_lib()))


@dg.asset_check(asset="rlvr_policy",
                description="Most sampled groups carry a reward signal (share above `min_signal_share`).")
def rlvr_sampling_success(context: dg.AssetCheckExecutionContext, config: ThresholdsConfig,
                          storage: StorageResource) -> dg.AssetCheckResult:
    from flywheel.monitoring.signals import sampling_success

    return _result(sampling_success(_training_history(context, storage), config.to_lib()))


@dg.asset_check(asset="rlvr_policy",
                description="Most sampled responses end on their own (share above `min_finished_share`), not cut "
                            "off by the token budget or the tool-step cap.")
def rlvr_samples_finished(context: dg.AssetCheckExecutionContext, config: ThresholdsConfig,
                          storage: StorageResource) -> dg.AssetCheckResult:
    from flywheel.monitoring.signals import finished_samples

    return _result(finished_samples(_training_history(context, storage), config.to_lib()))


@dg.asset_check(asset="eval_report", blocking=True,
                description="Not reward hacking: the training reward did not rise while held-out pass@1 fell "
                            "against the champion.")
def eval_no_reward_hacking(context: dg.AssetCheckExecutionContext, config: ThresholdsConfig,
                           storage: StorageResource) -> dg.AssetCheckResult:
    from flywheel.monitoring.signals import reward_hacking

    diff = latest_metadata(context.instance, "eval_report", _partition(context)).get("diff/overall")
    return _result(reward_hacking(_training_history(context, storage), diff, config.to_lib()))


@dg.asset_check(asset="eval_report",
                description="The champion re-evaluated in this run scores, per domain, within `max_eval_drift` "
                            "of what it scored when it was promoted.")
def eval_champion_drift(context: dg.AssetCheckExecutionContext, config: ThresholdsConfig,
                        storage: StorageResource) -> dg.AssetCheckResult:
    from flywheel.monitoring.signals import eval_drift
    from flywheel.registry.deploy import promised_rates

    md = latest_metadata(context.instance, "eval_report", _partition(context))
    now = {k.split("/")[1]: float(v) for k, v in md.items() if k.startswith("before/") and k.endswith("/pass@1")}
    promised = promised_rates(storage.paths().mlflow_uri, str(md.get("champion", "")))
    return _result(eval_drift(now, promised, config.to_lib()))


@dg.asset_check(asset="verifiers", blocking=True, description="Few verifier validations hit an infrastructure "
                "error (the sandbox or judge failed): above `max_verifier_infra_rate`, rewards cannot be trusted.")
def verifiers_infra_error_rate(config: ThresholdsConfig, storage: StorageResource) -> dg.AssetCheckResult:
    from flywheel.monitoring.signals import verifier_infra_rate
    from flywheel.monitoring.sources import verifier_reasons

    with storage.warehouse() as con:
        reasons = verifier_reasons(con)
    return _result(verifier_infra_rate(reasons, config.to_lib()))


@dg.multi_asset_check(specs=[
    dg.AssetCheckSpec("task_logs_quarantine_spike", asset="task_logs",
                      description="The newest day's quarantine rate is no spike against the days before it."),
    dg.AssetCheckSpec("task_logs_redaction_spike", asset="task_logs",
                      description="The newest day's redactions per row are no spike against the days before it."),
], pool=WAREHOUSE_POOL)
def task_logs_spikes(config: ThresholdsConfig, storage: StorageResource):
    from flywheel.monitoring.signals import spike
    from flywheel.monitoring.sources import IngestDay, ingest_days

    th = config.to_lib()
    with storage.warehouse() as con:
        days = ingest_days(con)
    *before, today = days or [IngestDay("none yet", 0, 0, 0)]
    for check, name, attr, floor in (("task_logs_quarantine_spike", "quarantine_spike", "quarantine_rate",
                                      th.min_quarantine_spike),
                                     ("task_logs_redaction_spike", "redaction_spike", "redactions_per_row",
                                      th.min_redaction_spike)):
        sig = spike(name, getattr(today, attr), [getattr(d, attr) for d in before], floor, th)
        r = _result(sig, xlabel="day")
        yield dg.AssetCheckResult(asset_key="task_logs", check_name=check, passed=r.passed, severity=r.severity,
                                  description=r.description, metadata={**r.metadata, "day": today.day})


@dg.asset_check(asset="task_pool", description="Mining still finds failures: the pool is not empty and not far "
                "below its usual size (`min_pool_ratio` of the median earlier pool).")
def task_pool_finding_failures(context: dg.AssetCheckExecutionContext,
                               config: ThresholdsConfig) -> dg.AssetCheckResult:
    from flywheel.monitoring.signals import pool_dry

    th = config.to_lib()
    records = context.instance.fetch_materializations(dg.AssetKey("task_pool"), limit=th.baseline_days + 1).records
    sizes = [int(r.asset_materialization.metadata["dagster/row_count"].value) for r in reversed(records)
             if "dagster/row_count" in r.asset_materialization.metadata]
    return _result(pool_dry(sizes[-1] if sizes else 0, sizes[:-1], th), xlabel="pool")


@dg.asset_check(asset="deployed_model",
                description="The served weights are the registered weights: the champion's folder and a running "
                            "`flywheel serve` hash (sha256 over the safetensors tensors) to the registered fingerprint.")
def served_weights_match_registry(storage: StorageResource) -> dg.AssetCheckResult:
    from flywheel.registry.deploy import served_weights_match
    from flywheel.serving.vllm_server import detached_server_fingerprint

    paths = storage.paths()
    ok, details = served_weights_match(paths.mlflow_uri, detached_server_fingerprint(paths.home))
    return dg.AssetCheckResult(passed=ok, severity=dg.AssetCheckSeverity.ERROR, description=details.get("reason"),
                               metadata={k: str(v) for k, v in details.items()})


def _check_alert(rec: dg.EventLogRecord, run: dg.DagsterRun | None, alerts: AlertResource) -> Alert:
    """The alert of one failed check evaluation; a retried run keeps its root, so a retry is the same incident."""
    ev = rec.event_log_entry.dagster_event.event_specific_data
    asset, part = ev.asset_key.to_user_string(), ev.partition or (run.tags.get("dagster/partition") if run else None)
    root = (run.tags.get("dagster/root_run_id") if run else None) or rec.run_id
    where = f"{asset}[{part}]" if part else asset
    message = ev.description or str(getattr(ev.metadata.get("message"), "value", "")) or "failed"
    return Alert(f"check:{where}:{ev.check_name}:{root}", ev.severity.value, f"{ev.check_name} failed on {where}",
                 message, "asset_check", alerts.run_link(rec.run_id),
                 {"run_id": rec.run_id, "blocking": bool(ev.blocking)})


@dg.sensor(name="alert_sensor", minimum_interval_seconds=30, default_status=dg.DefaultSensorStatus.RUNNING,
           description="Sends every failed asset check (WARN and ERROR) to the `alerts` webhook and the alert log, "
                       "once per incident (a retried run's check is the same incident).")
def alert_sensor(context: dg.SensorEvaluationContext, alerts: AlertResource,
                 storage: StorageResource) -> dg.SkipReason:
    records = context.instance.get_event_records(
        dg.EventRecordsFilter(dg.DagsterEventType.ASSET_CHECK_EVALUATION, after_cursor=int(context.cursor or 0)),
        ascending=True, limit=CHECK_CURSOR_BATCH)
    home, sent = storage.paths().home, 0
    for rec in records:
        if not rec.event_log_entry.dagster_event.event_specific_data.passed:
            alert = _check_alert(rec, context.instance.get_run_by_id(rec.run_id), alerts)
            sent += alerts.deliver(alert, home) is not None
    if records:
        context.update_cursor(str(records[-1].storage_id))
    return dg.SkipReason(f"{len(records)} check evaluation(s) read, {sent} new alert(s) sent")


@dg.run_failure_sensor(name="run_failure_alerts", minimum_interval_seconds=30,
                       default_status=dg.DefaultSensorStatus.RUNNING,
                       description="Sends every failed run to the `alerts` webhook and the alert log; retries of "
                                   "one run (same root run) are one incident.")
def run_failure_alerts(context: dg.RunFailureSensorContext, alerts: AlertResource, storage: StorageResource) -> None:
    run = context.dagster_run
    root = run.tags.get("dagster/root_run_id", run.run_id)
    part = run.tags.get("dagster/partition", "")
    alerts.deliver(Alert(f"run:{root}", "ERROR", f"{run.job_name}{f'[{part}]' if part else ''} failed",
                         (context.failure_event.message or "the run failed")[:1500], "run_failure",
                         alerts.run_link(run.run_id), {"run_id": run.run_id}), storage.paths().home)


@dg.sensor(name="champion_rollback_sensor", minimum_interval_seconds=3600,
           default_status=dg.DefaultSensorStatus.RUNNING,
           description="Tests the champion's live pass rate (its lines in task_logs since promotion) against what "
                       "its evaluation promised, with a sequential test valid under daily checking; on a "
                       "significant drop moves `champion` back to the previous version (reason in the registry's "
                       "history and on the version), alerts, and records an observation on deployed_model.")
def champion_rollback_sensor(context: dg.SensorEvaluationContext, storage: StorageResource, alerts: AlertResource,
                             rollback_rule: RollbackResource) -> dg.SensorResult | dg.SkipReason:
    from flywheel.registry.deploy import watch_champion

    paths = storage.paths()
    with storage.warehouse() as con:
        watch = watch_champion(con, paths.mlflow_uri, rollback_rule.to_lib())
    if watch is None or watch.rolled_back_to is None:
        return dg.SkipReason(watch.decision.reason if watch else "no champion with a predecessor to roll back to")
    reason = f"rolled back {watch.champion} -> {watch.rolled_back_to}: {watch.decision.reason}"
    alerts.deliver(Alert(f"rollback:{watch.champion}:{watch.decision.days[-1]}", "ERROR", f"champion {watch.champion} rolled back",
                         reason, "rollback", details=watch.decision.to_dict()), paths.home)
    context.log.warning(reason)
    meta = {"rolled_back": watch.champion, "champion": watch.rolled_back_to, "reason": reason,
            "live_pass_rate": watch.decision.live_rate, "promised_pass_rate": watch.decision.promised_rate}
    part = watch.base_model if context.instance.has_dynamic_partition(base_models.name, watch.base_model) else None
    return dg.SensorResult(asset_events=[dg.AssetObservation("deployed_model", partition=part, metadata=meta)])


CHECKS = [rlvr_entropy_not_collapsed, rlvr_rewards_not_flat, rlvr_sampling_success, rlvr_samples_finished,
          eval_no_reward_hacking,
          eval_champion_drift, verifiers_infra_error_rate, task_logs_spikes, task_pool_finding_failures,
          served_weights_match_registry]
SENSORS = [alert_sensor, run_failure_alerts, champion_rollback_sensor]
