"""The verifier fleet on local Ray: the same verdicts as the in-process pool, and no loss when an actor dies."""

from __future__ import annotations

import threading
import time

import pytest

from flywheel.fleet.config import FleetConfig
from flywheel.tasks.suites import train_suite
from flywheel.verifiers.batch import score_batch
from flywheel.verifiers.registry import VerifierRegistry


def _mixed() -> list[tuple[str, object, str]]:
    """Right and wrong answers in every domain, a crashing program, and a task that cannot be judged."""
    items: list[tuple[str, object, str]] = []
    for d in ("math", "code", "agent"):
        for i, t in enumerate(train_suite(d, 4)):
            items.append((d, t.verifier_task(), t.solution))
            wrong = {"math": "Answer: -12345", "code": "```python\nraise SystemExit(3)\n```", "agent": "nothing"}[d]
            items.append((d, t.verifier_task(), wrong if i % 2 else t.solution + "\n"))
    items.append(("code", "not a task", "x"))
    return items


def _same(a, b) -> bool:
    return (a.reward, a.passed, a.reason) == (b.reward, b.passed, b.reason)


@pytest.fixture(scope="module")
def fleet(ray_session):
    from flywheel.fleet.verifier_fleet import FleetScorer

    scorer = FleetScorer(FleetConfig(verifier_actors=2, sandbox_workers=2, batch_size=4, max_in_flight=1))
    yield scorer
    scorer.close()


def test_fleet_verdicts_equal_local_pool_verdicts(fleet, sandbox_pool):
    items = _mixed()
    local = score_batch(items, concurrency=2, registry=VerifierRegistry(sandbox=sandbox_pool, workers=2))
    got = fleet.many_with_keys(items)
    assert len(got) == len(items)
    assert all(_same(v, w) for (_, v), w in zip(got, local, strict=True)), [
        (v.reason, w.reason) for (_, v), w in zip(got, local, strict=True) if not _same(v, w)]
    assert {v.passed for _, v in got} == {True, False}  # the batch really mixes outcomes
    assert got[-1][0] is None and got[-1][1].details["error"] == "task"
    assert all(k is not None and k[2] for k, _ in got[:-1])  # (task id, response hash, verifier, version)
    stats = fleet.stats()
    assert 0 < stats["fleet/verifier_busy.0"] <= 1 and 0 < stats["fleet/verifier_busy.1"] <= 1
    assert 0 <= stats["idle/verifier_fleet"] < 1


def test_killing_an_actor_mid_batch_loses_nothing(fleet, ray_session):
    tasks = train_suite("code", 8)
    # distinct responses (no memo hits), each a correct solution that takes a little while in the sandbox
    items = [("code", t.verifier_task(), t.solution + f"\nimport time\ntime.sleep(0.05)  # {k}\n")
             for k in range(6) for t in tasks]
    before = fleet.slots.restarts
    victim = fleet.slots.handles[0]
    out: dict = {}
    worker = threading.Thread(target=lambda: out.update(v=fleet.many(items)))
    worker.start()
    deadline = time.monotonic() + 60
    while fleet.slots.busy_s(0) <= 0 and time.monotonic() < deadline:  # slot 0 answered once: work is flowing
        time.sleep(0.01)
    ray_session.kill(victim, no_restart=True)
    worker.join(timeout=120)
    verdicts = out["v"]
    assert fleet.slots.restarts == before + 1  # the death was seen mid-batch and the actor replaced
    assert fleet.slots.handles[0] is not victim
    assert len(verdicts) == len(items)
    assert all(v.passed and v.reward == 1.0 for v in verdicts), [v.reason for v in verdicts if not v.passed]


def test_in_flight_work_per_actor_is_bounded_and_results_keep_their_order(fleet, ray_session):
    from flywheel.fleet.actors import run_jobs

    tasks = train_suite("code", 6)
    expect = [(k + j) % 3 != 0 for k in range(4) for j in range(len(tasks))]  # a pattern of passes and failures
    pairs = [(k, t) for k in range(4) for t in tasks]
    payloads = [[("code", t.verifier_task(), (t.solution if ok else "```python\nraise SystemExit(1)\n```")
                  + f"\n# {k}\n")] for (k, t), ok in zip(pairs, expect, strict=True)]
    pending: dict = {}
    seen: list[int] = []

    def submit(handle, payload):
        mine = pending.setdefault(handle, [])
        _, busy = ray_session.wait(mine, num_returns=len(mine), timeout=0) if mine else ([], [])
        seen.append(len(busy))  # calls of this actor still running when the next one is sent
        ref = handle.score.remote(payload)
        mine.append(ref)
        return ref

    results = run_jobs(fleet.slots, payloads, submit, max_in_flight=2, max_attempts=2, timeout_s=120)
    assert max(seen) <= 1  # never a third call queued on an actor while two are out
    assert [v[0].passed for v in results] == expect  # in payload order


def test_the_rft_stage_verifies_its_candidates_on_the_fleet(fleet, tiny_model_dir, flywheel_home, tmp_path,
                                                              log_gold):
    """`train_policy`'s default stage scores through the fleet it is given, with the in-process result."""
    from flywheel.paths import FlywheelPaths
    from flywheel.train.api import train_policy
    from flywheel.train.config import GRPOConfig
    from flywheel.train.rft.config import RftConfig

    rft = RftConfig(tasks_per_domain={"math": 6}, samples_per_task=4, max_new_tokens=48, steps=2, batch_size=4,
                    include_logs=True)
    cfg = GRPOConfig(stage="rft", domain_weights={"math": 1.0}, replay_tasks_per_domain=0)
    tasks = train_suite("math", 6)
    local_home = FlywheelPaths(tmp_path / "local").ensure()
    for home in (flywheel_home, local_home):
        log_gold(home, tasks)  # logged successes RFT re-verifies (on the fleet too) and keeps
    before = len(fleet.memo) + fleet.hits
    on_fleet = train_policy(cfg, tiny_model_dir, "tiny-quick", paths=flywheel_home, tasks=tasks, rft=rft,
                            score_fn=fleet, log_date="2026-12-01")
    assert len(fleet.memo) + fleet.hits >= before + 6 * 4 + 6  # every sample and logged success, on the fleet
    assert on_fleet.sources["rft/examples"] >= 6
    in_process = train_policy(cfg, tiny_model_dir, "tiny-quick", paths=local_home, tasks=tasks, rft=rft,
                              log_date="2026-12-01")
    assert on_fleet.task_counts == in_process.task_counts and on_fleet.sources == in_process.sources

