"""RFT's mined-pool knobs: more samples on pool tasks (`pool_samples_per_task`) and variants of each chosen
pool task (`variants_per_task`) under the same per-domain task cap, decontaminated against every evaluation
suite; a replay-only run (no pool tasks) gets neither."""

from __future__ import annotations

import dataclasses

from flywheel.environments.base import is_heldout
from flywheel.tasks import world_suites
from flywheel.tasks.suites import heldout_suite, train_suite
from flywheel.train.rft.config import RftConfig
from flywheel.train.rft.data import choose_tasks, sample_candidates, samples_for
from flywheel.train.rft.variants import decontaminated, draw_variants, with_variants


def _tag(tasks, source):
    return [dataclasses.replace(t, meta={"source": source}) for t in tasks]  # mined tasks carry no level


def _pool_and_replay():
    pool = _tag(world_suites.production_suite("math", 6, split="train", seed=5), "pool")
    replay = _tag(train_suite("math", 40), "replay")
    return pool, replay


def test_variants_come_after_the_pool_and_before_replay_under_the_cap():
    pool, replay = _pool_and_replay()
    chosen = choose_tasks(pool + replay, {"math": 30}, seed=0, pool_first=True)
    out = with_variants(chosen, {"math": 30}, 3, seed=0)
    sources = [t.meta["source"] for t in out]
    assert len(out) == 30 and len({t.task_id for t in out}) == 30
    assert sources == ["pool"] * 6 + ["variant"] * sources.count("variant") + ["replay"] * sources.count("replay")
    assert 12 <= sources.count("variant") <= 18  # 3 per pool task, fewer only where one was drawn twice
    assert all(t.meta["variant_of"] in {p.task_id for p in pool} for t in out if t.meta["source"] == "variant")
    assert out == with_variants(chosen, {"math": 30}, 3, seed=0)  # deterministic
    # a small cap keeps the pool's own tasks first
    tight = with_variants(choose_tasks(pool + replay, {"math": 8}, 0, True), {"math": 8}, 3, seed=0)
    assert [t.meta["source"] for t in tight] == ["pool"] * 6 + ["variant"] * 2


def test_a_replay_only_run_gets_no_variants():
    _, replay = _pool_and_replay()
    chosen = choose_tasks(replay, {"math": 20}, seed=0)
    assert with_variants(chosen, {"math": 20}, 4, seed=0) == chosen


def test_variants_are_never_an_evaluation_task():
    pool = _tag([t for d in ("math", "code", "agent")
                 for t in world_suites.production_suite(d, 30, split="train", seed=11)], "pool")
    got = draw_variants(pool, 3, seed=2)
    assert {t.domain for t in got} == {"math", "code", "agent"}
    scored = {t.task_id for d in ("math", "code", "agent") for suite in ("heldout", "production", "test")
              for t in world_suites.suite_tasks(suite, d, 400)}
    assert not {t.task_id for t in got} & scored and not any(is_heldout(t.prompt) for t in got)
    # the decontamination itself drops a prompt an evaluation suite holds
    held = heldout_suite("math", 3)
    assert decontaminated([*_tag(held, "variant"), got[0]]) == [got[0]]


def test_pool_tasks_get_their_own_sample_count(tiny_model):
    model, tok = tiny_model
    pool, replay = _pool_and_replay()
    cfg = RftConfig(samples_per_task=1, pool_samples_per_task=3, max_new_tokens=8)
    assert [samples_for(t, cfg) for t in (pool[0], replay[0])] == [3, 1]
    assert samples_for(pool[0], cfg.replace(pool_samples_per_task=0)) == 1
    assert samples_for(draw_variants(pool[:1], 1, seed=0)[0], cfg) == 3  # a variant of a mined task too
    cands = sample_candidates(model, tok, pool[:2] + replay[:2], cfg, "cpu")
    per = {t.task_id: sum(c.task.task_id == t.task_id for c in cands) for t in pool[:2] + replay[:2]}
    assert [per[t.task_id] for t in pool[:2] + replay[:2]] == [3, 3, 1, 1]


def test_replay_keeps_its_share_and_every_pool_task_keeps_some_variants():
    pool, replay = _pool_and_replay()
    chosen = choose_tasks(pool + replay, {"math": 20}, seed=0, pool_first=True, replay_share=0.5)
    out = with_variants(chosen, {"math": 20}, 8, seed=0, replay_share=0.5)
    sources = [t.meta["source"] for t in out]
    assert len(out) == 20 and sources.count("replay") == 10  # half the places stay replay's
    assert sources == ["pool"] * 6 + ["variant"] * 4 + ["replay"] * 10
    # 4 places for 6 pool tasks' variants: round robin, so no task gets a second before another its first
    parents = [t.meta["variant_of"] for t in out if t.meta["source"] == "variant"]
    assert len(set(parents)) == 4
    # the share caps the pool itself too: a pool bigger than its budget is sampled down
    few = choose_tasks(pool + replay, {"math": 8}, seed=0, pool_first=True, replay_share=0.75)
    assert [t.meta["source"] for t in few].count("pool") == 2 and len(few) == 8
    # share 0 is the old rule: the pool and its variants may take every place
    greedy = with_variants(choose_tasks(pool + replay, {"math": 20}, 0, True), {"math": 20}, 8, 0, replay_share=0.0)
    assert [t.meta["source"] for t in greedy].count("replay") == 0 and len(greedy) == 20


def test_pool_tasks_past_their_budget_are_not_drawn_back_in_as_replay():
    """The replay share is a guarantee: the pool tasks it leaves out do not return as replay fillers (they did,
    at random), unless replay alone cannot fill the domain's places (a pool-only run keeps its whole pool)."""
    pool, replay = _pool_and_replay()  # 6 pool tasks
    for seed in range(20):
        chosen = choose_tasks(pool + replay, {"math": 8}, seed, pool_first=True, replay_share=0.5)
        assert [t.meta["source"] for t in chosen].count("pool") == 4 and len(chosen) == 8
    only_pool = choose_tasks(pool + replay[:1], {"math": 8}, 0, pool_first=True, replay_share=0.5)
    assert [t.meta["source"] for t in only_pool].count("pool") == 6 and len(only_pool) == 7
