"""The monitoring stage under Dagster: each check fires on real data, the alert sensor delivers each failure
once to a webhook on 127.0.0.1, and the rollback sensor rolls back a champion whose live pass rate dropped."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import dagster as dg
import pytest

from flywheel_dagster.assets import monitoring
from flywheel_dagster.resources.alerts import AlertResource, RollbackResource
from flywheel_dagster.resources.defaults import default_resources

PART = "tiny-test"


@pytest.fixture
def webhook():
    """A receiver on 127.0.0.1: `.url`, and `.received` (JSON bodies, in order)."""
    received: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's name
            received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield type("Hook", (), {"url": f"http://127.0.0.1:{server.server_address[1]}/", "received": received})
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def _train(paths, policy, temperature: float, score) -> str:
    """A real two-step GRPO run of a random tiny policy (its MLflow run id)."""
    from flywheel.tasks.suites import train_suite
    from flywheel.train.config import GRPOConfig
    from flywheel.train.grpo.trainer import RunInputs, train_rlvr

    cfg = GRPOConfig(steps=2, prompts_per_step=3, group_size=4, micro_batch_size=6, max_new_tokens=12, lr=1e-2,
                     domain_weights={"math": 1.0}, num_threads=1, temperature=temperature)
    res = train_rlvr(cfg, RunInputs(policy, train_suite("math", 20), paths, f"t{temperature}"), score_fn=score)
    return res.mlflow_run_id


def _run_checks(instance, storage, asset, checks, partition=PART, thresholds=None, **resources):
    """Only `checks` (on `asset`'s latest materialization) in a real run on `instance`."""
    config = {"ops": {f"{asset.key.to_user_string()}_{c.check_key.name}": {"config": thresholds}
                      for c in checks}} if thresholds else None
    res = dg.materialize([asset, *checks], selection=dg.AssetSelection.checks(*checks), instance=instance,
                         run_config=config,
                         tags={"dagster/partition": partition} if partition else None, raise_on_error=False,
                         resources={**default_resources(), "storage": storage, **resources})
    return {c.check_name: c for c in res.get_asset_check_evaluations()}


def _digits(domain, task, response):
    from flywheel.environments.verdict import Verdict

    n = sum(c.isdigit() for c in response)
    return Verdict(min(n, 3) / 3, n >= 3, f"{n} digits")


def test_training_checks_fire_on_real_runs_and_the_sensor_alerts_once_each(flywheel_home, storage, seed_mlflow_db,
                                                                           random_tiny, webhook):
    from flywheel.environments.verdict import Verdict
    from flywheel_dagster.assets.training import rlvr_policy

    seed_mlflow_db(flywheel_home)
    policy = random_tiny(flywheel_home.models / "policy")
    instance = dg.DagsterInstance.ephemeral()
    checks = [monitoring.rlvr_entropy_not_collapsed, monitoring.rlvr_rewards_not_flat, monitoring.rlvr_sampling_success]

    def judge(run_id: str, **config):
        instance.report_runless_asset_event(dg.AssetMaterialization("rlvr_policy", partition=PART,
                                                                    metadata={"mlflow_run_id": run_id}))
        return _run_checks(instance, storage, rlvr_policy, checks, **config)

    healthy = _train(flywheel_home, policy, 1.0, _digits)
    got = judge(healthy)
    assert all(c.passed for c in got.values()), {n: c.metadata["message"].value for n, c in got.items()}
    # the same real entropy against a floor above it: the check reads the run's entropy and fires
    got = judge(healthy, thresholds={"min_entropy": 50.0})
    assert not got["rlvr_entropy_not_collapsed"].passed
    assert got["rlvr_entropy_not_collapsed"].severity == dg.AssetCheckSeverity.ERROR
    assert "data:image/png;base64," in got["rlvr_entropy_not_collapsed"].metadata["chart"].value
    flat = _train(flywheel_home, policy, 1.0, lambda d, t, r: Verdict(0.0, False, "flat"))  # NaN-free, flat
    got = judge(flat)
    assert not got["rlvr_rewards_not_flat"].passed and not got["rlvr_sampling_success"].passed
    assert got["rlvr_sampling_success"].severity == dg.AssetCheckSeverity.WARN
    # a random policy under a 12-token budget: its samples are cut off, not finished (the run's own metric)
    finished = [monitoring.rlvr_samples_finished]
    got = _run_checks(instance, storage, rlvr_policy, finished)["rlvr_samples_finished"]
    assert not got.passed and got.severity == dg.AssetCheckSeverity.WARN and got.metadata["value"].value < 0.5
    assert _run_checks(instance, storage, rlvr_policy, finished,
                       thresholds={"min_finished_share": 0.0})["rlvr_samples_finished"].passed

    alerts = AlertResource(webhook_url=webhook.url)
    ctx = dg.build_sensor_context(instance=instance, resources={"alerts": alerts, "storage": storage})
    monitoring.alert_sensor(ctx)
    titles = sorted(m["blocks"][0]["text"]["text"] for m in webhook.received)
    assert titles == ["[ERROR] rlvr_entropy_not_collapsed failed on rlvr_policy[tiny-test]",
                      "[ERROR] rlvr_rewards_not_flat failed on rlvr_policy[tiny-test]",
                      "[WARN] rlvr_samples_finished failed on rlvr_policy[tiny-test]",
                      "[WARN] rlvr_sampling_success failed on rlvr_policy[tiny-test]"]
    ctx = dg.build_sensor_context(instance=instance, cursor=None, resources={"alerts": alerts, "storage": storage})
    monitoring.alert_sensor(ctx)  # read from the start again: every incident was delivered already
    assert len(webhook.received) == 4


def _champion_serving(flywheel_home, mlflow_registry, random_tiny, rec, write_jsonl, live_rate: float) -> None:
    """v1 (the base) then v2 promoted on an eval pass@1 of 0.7; two days of production logs of v2 passing at
    `live_rate`, ingested into the warehouse."""
    import random
    import shutil

    from flywheel.logs.ingest import ingest
    from flywheel.warehouse import connect

    base = random_tiny(flywheel_home.models / "base" / "tiny-test")
    v1 = mlflow_registry.ensure_champion(base, PART)
    v2 = mlflow_registry.register(shutil.copytree(base, flywheel_home.models / "cand"),
                                  {"base_model": PART, "eval_pass_rates": {"math": 0.7, "overall": 0.7}})
    mlflow_registry.set_champion(v2.version, reason="gate passed")
    assert (v1.version, v2.version) == ("1", "2")
    rng = random.Random(0)
    con = connect(flywheel_home.warehouse)
    for day in ("2026-12-02", "2026-12-03"):
        folder = flywheel_home.raw_logs / day
        folder.mkdir(parents=True)
        write_jsonl(folder / "part-0.jsonl", [
            rec(f"{day}-{i}", model="flywheel-policy:2", timestamp=f"{day}T10:00:00Z",
                outcome={"passed": rng.random() < live_rate}) for i in range(400)])
        ingest(str(folder), con, log_date=day)
    con.close()


@pytest.mark.parametrize("live_rate, rolled_back", [(0.55, True), (0.7, False)])
def test_rollback_sensor_rolls_back_a_champion_whose_live_pass_rate_dropped(
        flywheel_home, storage, mlflow_registry, random_tiny, rec, write_jsonl, webhook, live_rate, rolled_back):
    from flywheel.registry.mlflow_registry import EVENTS_TAG

    _champion_serving(flywheel_home, mlflow_registry, random_tiny, rec, write_jsonl, live_rate)
    instance = dg.DagsterInstance.ephemeral()
    resources = {"storage": storage, "alerts": AlertResource(webhook_url=webhook.url),
                 "rollback_rule": RollbackResource()}
    out = monitoring.champion_rollback_sensor(dg.build_sensor_context(instance=instance, resources=resources))
    assert mlflow_registry.champion().version == ("1" if rolled_back else "2")
    if not rolled_back:
        assert isinstance(out, dg.SkipReason) and "kept" in out.skip_message and not webhook.received
        return
    obs = out.asset_events[0]
    assert obs.metadata["rolled_back"].value == "flywheel-policy:2" and obs.metadata["champion"].value == "flywheel-policy:1"
    events = json.loads(mlflow_registry.client.get_registered_model("flywheel-policy").tags[EVENTS_TAG])
    assert events[-1]["action"] == "rollback" and "live pass rate dropped" in events[-1]["reason"]
    assert "significant drop" in mlflow_registry.get("2").tags["flywheel.rolled_back"]
    assert len(webhook.received) == 1 and "rolled back" in webhook.received[0]["text"]
    again = monitoring.champion_rollback_sensor(dg.build_sensor_context(instance=instance, resources=resources))
    assert isinstance(again, dg.SkipReason) and mlflow_registry.champion().version == "1"
    assert len(webhook.received) == 1


def test_a_verifier_whose_sandbox_fails_raises_the_infra_alarm(flywheel_home, storage, fill_task_pool,
                                                              monkeypatch, webhook):
    from flywheel.warehouse import connect
    from flywheel_dagster.assets.verifiers import verifiers
    from flywheel_dagster.resources.sandbox import SandboxPoolResource

    con = connect(flywheel_home.warehouse)
    fill_task_pool(con, n=2, broken=False)
    con.close()

    @dg.asset(name="task_pool")
    def task_pool_stub() -> None:
        """Stands in for mining's asset so the graph resolves; the table is filled above."""

    monkeypatch.setenv("DOCKER_HOST", f"unix://{flywheel_home.home}/no-engine.sock")  # a sandbox that cannot run
    instance = dg.DagsterInstance.ephemeral()
    res = dg.materialize([task_pool_stub, verifiers, monitoring.verifiers_infra_error_rate],
                         selection=dg.AssetSelection.assets("verifiers"), instance=instance, raise_on_error=False,
                         resources={"storage": storage, "sandbox": SandboxPoolResource(backend="docker", retries=0)},
                         run_config={"ops": {"verifiers": {"config": {"slow_probes": False}}}})
    [check] = res.get_asset_check_evaluations()
    assert not check.passed and check.severity == dg.AssetCheckSeverity.ERROR
    assert check.metadata["infra_errors"].value == "2"  # the two code tasks: their judge could not run
    assert not res.success  # blocking: nothing trains on those verdicts
    ctx = dg.build_sensor_context(instance=instance, resources={"alerts": AlertResource(webhook_url=webhook.url),
                                                                "storage": storage})
    monitoring.alert_sensor(ctx)
    assert [m["blocks"][0]["text"]["text"] for m in webhook.received] == [
        "[ERROR] verifiers_infra_error_rate failed on verifiers"]


def test_a_quarantine_and_redaction_spike_in_ingest_fire(flywheel_home, storage, rec, write_jsonl, webhook):
    from flywheel.logs.ingest import ingest
    from flywheel.warehouse import connect
    from flywheel_dagster.assets.logs import task_logs

    con = connect(flywheel_home.warehouse)
    for day, bad, emails in (("2026-12-01", 1, 0), ("2026-12-02", 1, 0), ("2026-12-03", 30, 40)):
        folder = flywheel_home.raw_logs / day
        folder.mkdir(parents=True)
        lines = [rec(f"{day}-{i}", timestamp=f"{day}T10:00:00Z",
                     messages=[{"role": "user", "content": f"mail me at user{i}@example.com" if i < emails
                                else f"What is {i}+1?"}]) for i in range(100)]
        write_jsonl(folder / "part-0.jsonl", lines + ["{not json"] * bad)
        ingest(str(folder), con, log_date=day)
    con.close()
    instance = dg.DagsterInstance.ephemeral()
    got = _run_checks(instance, storage, task_logs, [monitoring.task_logs_spikes], partition=None)
    assert {n: c.passed for n, c in got.items()} == {"task_logs_quarantine_spike": False,
                                                      "task_logs_redaction_spike": False}
    q = got["task_logs_quarantine_spike"]
    assert q.severity == dg.AssetCheckSeverity.WARN and q.metadata["day"].value == "2026-12-03"
    assert q.metadata["value"].value == pytest.approx(30 / 130, abs=1e-4)
    monitoring.alert_sensor(dg.build_sensor_context(
        instance=instance, resources={"alerts": AlertResource(webhook_url=webhook.url), "storage": storage}))
    assert sorted(m["blocks"][0]["text"]["text"] for m in webhook.received) == [
        "[WARN] task_logs_quarantine_spike failed on task_logs", "[WARN] task_logs_redaction_spike failed on task_logs"]


def test_served_weights_check_fires_when_a_running_server_loaded_other_weights(flywheel_home, storage,
                                                                               mlflow_registry, random_tiny):
    import os

    from flywheel.serving.vllm_server import DETACHED_STATE, ServerInfo
    from flywheel_dagster.assets.deployment import deployed_model

    champ = mlflow_registry.ensure_champion(random_tiny(flywheel_home.models / "base" / PART), PART)
    state = flywheel_home.home / DETACHED_STATE
    state.parent.mkdir(parents=True, exist_ok=True)

    def served(digest: str) -> dict:
        # what `flywheel serve --detach` records (this process stands in for the live server's pid)
        state.write_text(ServerInfo(os.getpid(), os.getpid(), "http://127.0.0.1:8000/v1", champ.uri, champ.model_path,
                                    "vllm.log", [], digest).to_json())
        return _run_checks(dg.DagsterInstance.ephemeral(), storage, deployed_model,
                           [monitoring.served_weights_match_registry])["served_weights_match_registry"]

    assert served(champ.tags["flywheel.weights_sha256"]).passed
    check = served("f" * 64)
    assert not check.passed and check.severity == dg.AssetCheckSeverity.ERROR
    assert check.metadata["served: flywheel serve flywheel-policy:1"].value == "f" * 64


def test_champion_drift_and_a_pool_that_stopped_finding_failures(flywheel_home, storage, mlflow_registry,
                                                                 random_tiny):
    from flywheel_dagster.assets.evaluation import eval_report
    from flywheel_dagster.assets.mining import task_pool

    champ = mlflow_registry.ensure_champion(random_tiny(flywheel_home.models / "base" / PART), PART)
    mlflow_registry.set_tags(champ.version, {"flywheel.eval_pass_rates": {"math": 0.7, "code": 0.5}})
    instance = dg.DagsterInstance.ephemeral()

    def drift(math_now: float):
        instance.report_runless_asset_event(dg.AssetMaterialization("eval_report", partition=PART, metadata={
            "champion": champ.uri, "before/math/pass@1": math_now, "before/code/pass@1": 0.5}))
        return _run_checks(instance, storage, eval_report, [monitoring.eval_champion_drift])["eval_champion_drift"]

    assert drift(0.68).passed
    fired = drift(0.55)
    assert not fired.passed and fired.severity == dg.AssetCheckSeverity.WARN and fired.metadata["value"].value == 0.15

    for size in (120, 100, 110, 10):
        instance.report_runless_asset_event(dg.AssetMaterialization("task_pool", metadata={"dagster/row_count": size}))
    pool = _run_checks(instance, storage, task_pool, [monitoring.task_pool_finding_failures], partition=None)
    check = pool["task_pool_finding_failures"]
    assert not check.passed and check.severity == dg.AssetCheckSeverity.WARN
    instance.report_runless_asset_event(dg.AssetMaterialization("task_pool", metadata={"dagster/row_count": 0}))
    check = _run_checks(instance, storage, task_pool, [monitoring.task_pool_finding_failures],
                        partition=None)["task_pool_finding_failures"]
    assert not check.passed and check.severity == dg.AssetCheckSeverity.ERROR


def test_a_failed_run_and_its_retry_are_one_alert(storage, webhook):
    @dg.asset
    def broken() -> None:
        raise RuntimeError("the judge is down")

    instance = dg.DagsterInstance.ephemeral()
    alerts = AlertResource(webhook_url=webhook.url)
    first = dg.materialize([broken], instance=instance, raise_on_error=False)
    retry = dg.materialize([broken], instance=instance, raise_on_error=False,
                           tags={"dagster/root_run_id": first.run_id, "dagster/parent_run_id": first.run_id})
    for res in (first, retry):
        run = instance.get_run_by_id(res.run_id)
        failure = next(e for e in res.all_events if e.event_type == dg.DagsterEventType.RUN_FAILURE)
        ctx = dg.build_run_status_sensor_context("run_failure_alerts", failure, instance, run,
                                                 resources={"alerts": alerts, "storage": storage}).for_run_failure()
        monitoring.run_failure_alerts(ctx)
    assert len(webhook.received) == 1
    assert webhook.received[0]["blocks"][0]["text"]["text"] == "[ERROR] __ephemeral_asset_job__ failed"
    assert "broken" in webhook.received[0]["text"]


def test_reward_up_while_heldout_falls_blocks_promotion(flywheel_home, storage, seed_mlflow_db):
    from flywheel.train.common.telemetry import Telemetry
    from flywheel_dagster.assets.evaluation import eval_report

    seed_mlflow_db(flywheel_home)
    tele = Telemetry(flywheel_home.mlflow_uri, artifact_root=flywheel_home.mlflow_artifacts)
    run_id = tele.start("rlvr-hacked", {"steps": 6})
    for step, reward in enumerate((0.2, 0.25, 0.3, 0.6, 0.7, 0.8), 1):  # the trainer's own logger
        tele.log_metrics(step, {"reward/mean": reward, "reward/std": 0.3})
    tele.finish()
    instance = dg.DagsterInstance.ephemeral()
    instance.report_runless_asset_event(dg.AssetMaterialization("rlvr_policy", partition=PART,
                                                                metadata={"mlflow_run_id": run_id}))

    def judged(heldout_diff: float):
        instance.report_runless_asset_event(dg.AssetMaterialization("eval_report", partition=PART,
                                                                    metadata={"diff/overall": heldout_diff}))
        return _run_checks(instance, storage, eval_report, [monitoring.eval_no_reward_hacking])["eval_no_reward_hacking"]

    assert judged(+0.04).passed  # reward and held-out both rose: learning
    hacked = judged(-0.05)
    assert not hacked.passed and hacked.severity == dg.AssetCheckSeverity.ERROR
    assert "reward hacking" in hacked.metadata["message"].value
