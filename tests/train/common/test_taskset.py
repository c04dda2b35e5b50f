"""The run's data: the mined pool mixed with train-suite replay (never held-out), the per-task sample cap,
and the write-back of each task's attempts and passes into difficulty_history."""

from __future__ import annotations

import json

import duckdb
import pytest

from flywheel.mining.pool import TASK_POOL_COLUMNS
from flywheel.rollout.types import Rollout
from flywheel.tasks.base import Task
from flywheel.tasks.sources import tagged
from flywheel.tasks.suites import DOMAINS, heldout_suite, is_heldout_prompt, train_suite
from flywheel.train.api import train_policy
from flywheel.train.common.difficulty import history_pass_rates, record_difficulty, training_model_name
from flywheel.train.common.taskset import build_task_set, replay_tasks
from flywheel.train.common.telemetry import Telemetry
from flywheel.train.config import TrainConfig
from flywheel.train.grpo.scheduler import Group, TaskScheduler
from flywheel.train.grpo.trainer import RunInputs, train_rlvr
from flywheel.verifiers.verdict import Verdict

OFF = Telemetry(None, enabled=False)


def _fake_groups(tasks: list[Task], group_size: int, passed: bool = False) -> list[Group]:
    def rollout(t: Task, i: int) -> Rollout:
        r = Rollout("p", [1], [2], [0.0], [1], "x", 0, t.task_id, t.domain, i)
        r.verdict = Verdict(float(i % 2), bool(i % 2) or passed, "")  # mixed rewards: every group has signal
        return r

    return [Group(t, [rollout(t, i) for i in range(group_size)]) for t in tasks]


def test_scheduler_stops_drawing_a_task_at_its_cap():
    tasks = train_suite("math", 5)
    sched = TaskScheduler(tasks, {"math": 1.0}, max_samples=8, group_size=4)
    drawn = []
    for step in range(20):
        kept, _ = sched.collect(3, step, lambda ts: _fake_groups(ts, 4), dynamic=True, max_refill_rounds=1)
        drawn.append(len(kept))
    assert max(sched.attempts.values()) <= 8  # the cap holds for every task
    assert sum(sched.attempts.values()) == 5 * 8  # every task was used up to its cap, then no more
    assert sched.exhausted() and drawn[-1] == 0


def test_scheduler_mixes_pool_and_replay_by_share():
    pool = tagged(train_suite("math", 10), "pool")
    replay = tagged(train_suite("math", 30)[10:], "replay")
    for share, want in ((0.0, {"pool"}), (1.0, {"replay"})):
        sched = TaskScheduler(pool + replay, {"math": 1.0}, replay_share=share)
        picked = {sched.source_of[t.task_id] for step in range(10) for t in sched.sample(4, step)}
        assert picked == want, share
    sched = TaskScheduler(pool + replay, {"math": 1.0}, replay_share=0.5)
    srcs = [sched.source_of[t.task_id] for step in range(50) for t in sched.sample(4, step)]
    assert 0.3 < srcs.count("replay") / len(srcs) < 0.7


def test_real_run_respects_the_cap_and_stops_when_every_task_is_used_up(flywheel_home, policy_dir):
    """Real verifiers (math), a real tiny policy: 3 tasks x cap 8 = 6 groups of 4, then the run has nothing left."""
    cfg = TrainConfig(steps=10, prompts_per_step=2, group_size=4, max_samples_per_task=8, max_new_tokens=8,
                     domain_weights={"math": 1.0}, dynamic_sampling=False, dev_every=0, num_threads=1)
    res = train_rlvr(cfg, RunInputs(policy_dir, tagged(train_suite("math", 3), "pool"), flywheel_home, "cap"),
                     telemetry=OFF)
    assert res.finished and res.stop_reason == "exhausted" and res.steps_done == 3
    assert {a for _, a, _ in res.task_counts.values()} == {8}
    assert res.sources == {"tasks/pool": 3, "samples/pool": 24}


def _warehouse_with_pool(path, tasks: list[Task]) -> None:
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE task_pool (" + ", ".join(f"{c} {t}" for c, t in TASK_POOL_COLUMNS) + ")")
    con.executemany("INSERT INTO task_pool VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", [
        (t.task_id, t.domain, t.prompt, json.dumps(t.reference), None, 4, 2, 0.5, 0.5, "frontier", i + 1)
        for i, t in enumerate(tasks)])
    con.execute("CREATE TABLE verifiers (task_id VARCHAR, domain VARCHAR, verifier_version VARCHAR, valid BOOLEAN, "
                "reason VARCHAR, task JSON, validated_at TIMESTAMP)")
    con.executemany("INSERT INTO verifiers VALUES (?, ?, 'v', ?, 'x', NULL, NULL)",
                    [(t.task_id, t.domain, i != 0) for i, t in enumerate(tasks)])  # the first one is invalid
    con.close()


def test_task_set_is_pool_plus_replay_and_never_held_out(flywheel_home):
    pool = train_suite("math", 4) + train_suite("code", 2)
    _warehouse_with_pool(flywheel_home.warehouse, pool)
    cfg = TrainConfig(domain_weights={"math": 0.5, "code": 0.5}, replay_tasks_per_domain=20, dev_tasks_per_domain=8)
    data = build_task_set(flywheel_home.warehouse, cfg)
    by_src: dict[str, list[Task]] = {}
    for t in data.tasks:
        by_src.setdefault(t.meta["source"], []).append(t)
    assert [t.task_id for t in by_src["pool"]] == [t.task_id for t in pool[1:]]  # valid verifiers only, rank order
    assert len(by_src["replay"]) == 40 and {t.domain for t in by_src["replay"]} == {"math", "code"}
    held = {t.task_id for d in DOMAINS for t in heldout_suite(d)}
    for t in by_src["replay"] + data.dev:
        assert not is_heldout_prompt(t.prompt) and t.task_id not in held
    ids = [t.task_id for t in data.tasks]
    assert len(ids) == len(set(ids)) and not set(ids) & {t.task_id for t in data.dev}  # dev is disjoint
    assert len(data.dev) == 16 and data.counts() == {"pool": 5, "replay": 40, "dev": 16}


def test_train_policy_writes_attempts_and_passes_back(flywheel_home, policy_dir):
    pool = train_suite("math", 4)
    _warehouse_with_pool(flywheel_home.warehouse, pool)
    cfg = TrainConfig(stage="rl", steps=2, prompts_per_step=4, group_size=4, max_new_tokens=8,
                     domain_weights={"math": 1.0}, replay_tasks_per_domain=6, dev_every=0, num_threads=1)
    res = train_policy(cfg, policy_dir, "wb", paths=flywheel_home, telemetry=OFF, log_date="2026-12-02")
    assert res.manifest["n_tasks.pool"] == 3 and res.manifest["n_tasks.replay"] == 6
    assert res.sources["tasks/pool"] + res.sources["tasks/replay"] == len(res.task_counts) > 0
    con = duckdb.connect(str(flywheel_home.warehouse))
    rows = con.execute("SELECT task_id, domain, attempts, passes, strftime(log_date, '%Y-%m-%d') FROM "
                       "difficulty_history WHERE model = ?", [training_model_name("wb")]).fetchall()
    assert res.difficulty_rows == len(rows) == len(res.task_counts)
    assert {r[0]: (r[1], r[2], r[3]) for r in rows} == res.task_counts
    assert {r[4] for r in rows} == {"2026-12-02"} and all(r[2] % 4 == 0 and 0 <= r[3] <= r[2] for r in rows)
    got = history_pass_rates(con, [r[0] for r in rows])  # what the next run's scheduler starts from
    assert got == pytest.approx({r[0]: (r[3] + 1) / (r[2] + 2) for r in rows})
    con.close()
    # the same (model, day) again: rows are replaced, never added to
    train_policy(cfg, policy_dir, "wb", paths=flywheel_home, telemetry=OFF, log_date="2026-12-02")
    con = duckdb.connect(str(flywheel_home.warehouse))
    n = con.execute("SELECT count(*) FROM difficulty_history WHERE model = ?", [training_model_name("wb")]).fetchone()
    assert n[0] == len(rows)
    con.close()


def test_replay_moves_on_to_tasks_earlier_runs_have_not_trained_on(flywheel_home):
    suite = [t.task_id for t in train_suite("math", 30)]
    first = [t.task_id for t in replay_tasks(["math"], 5, set())]
    assert first == suite[:5]  # nothing trained yet: the suite's first tasks
    record_difficulty(flywheel_home.warehouse, {t: ("math", 8, 3) for t in first[:3]},
                      training_model_name("tiny-v1"), "2026-12-01")
    record_difficulty(flywheel_home.warehouse, {suite[6]: ("math", 4, 0)}, "tiny-v1", "2026-12-01")  # a served model
    cfg = TrainConfig(domain_weights={"math": 1.0}, replay_tasks_per_domain=5, dev_every=0)
    data = build_task_set(flywheel_home.warehouse, cfg, fallback_per_domain=5, log_date="2026-12-02")
    # the three trained tasks give way to the next untrained ones; a served model's rows do not count
    assert [t.task_id for t in data.tasks] == [suite[i] for i in (3, 4, 5, 6, 7)]
    assert data.pass_rates == {suite[6]: pytest.approx(1 / 6)}  # the scheduler's prior reads every model's rows
    # a re-run of the day the rows were written for ignores them: the same inputs pick the same tasks
    again = build_task_set(flywheel_home.warehouse, cfg, fallback_per_domain=5, log_date="2026-12-01")
    assert [t.task_id for t in again.tasks] == suite[:5]


def test_use_pool_off_is_replay_only_with_the_same_replay(flywheel_home):
    """The ablation's replay-only arm: the mined pool ignored, the replay it would have trained beside unchanged."""
    pool = train_suite("math", 4)
    _warehouse_with_pool(flywheel_home.warehouse, pool)
    cfg = TrainConfig(domain_weights={"math": 1.0}, replay_tasks_per_domain=20, dev_tasks_per_domain=8)
    with_pool = build_task_set(flywheel_home.warehouse, cfg)
    without = build_task_set(flywheel_home.warehouse, cfg.__class__(**{**cfg.__dict__, "use_pool": False}))
    assert without.counts()["replay"] == 20 and "pool" not in without.counts()
    assert with_pool.counts()["pool"] == 3
