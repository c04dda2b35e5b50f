"""`reference_solutions`: each variant's gold solution, written as the base was taught, joins RFT's data
only through the verifiers, and only when asked for."""

from __future__ import annotations

import dataclasses
import json

from flywheel.environments.registry import default_environments
from flywheel.environments.targets import agent_target, scratchpad, sft_target
from flywheel.paths import RECIPE_FILE
from flywheel.tasks.sources import POOL
from flywheel.tasks.world_suites import production_suite
from flywheel.train.rft.config import RftConfig
from flywheel.train.rft.data import collect_examples
from flywheel.train.rft.run import base_formats
from flywheel.verifiers import score

TINY_V3 = {"math_format": "scratchpad", "agent_format": "plan"}


def _production_only(domain: str, n: int):
    env = default_environments().for_domain(domain)
    return env, [t for t in production_suite(domain, 60, "train", seed=5) if env.task_level(t) in env.production_levels][:n]


def test_references_of_production_only_variants_are_in_the_base_format_and_pass():
    for domain in ("math", "code", "agent"):
        env, tasks = _production_only(domain, 3)
        assert tasks, domain
        for v in env.variants(tasks[0], 4, 0):
            ref = sft_target(v, TINY_V3)
            expected = (scratchpad(v.solution) if domain == "math" else agent_target(v, "plan") if domain == "agent"
                        else v.solution)
            assert ref == expected
            assert score(domain, v.verifier_task(), ref).passed, (domain, ref)
    _, (t,) = _production_only("math", 1)
    assert sft_target(t, {}) == t.solution  # another base: the environment's solution as it is


def test_base_formats_read_the_build_recipe(tmp_path):
    assert base_formats(tmp_path) == {}
    (tmp_path / RECIPE_FILE).write_text(json.dumps({"release": "tiny-v3", **TINY_V3, "seed": 0}))
    assert base_formats(tmp_path) == TINY_V3
    # a champion two turns deep: its formats are its base's, found through each policy's flywheel_rft.json
    first, second = tmp_path / "turn1", tmp_path / "turn2"
    for policy, parent in ((first, tmp_path), (second, first)):
        policy.mkdir()
        (policy / "flywheel_rft.json").write_text(json.dumps({"stage": "rft", "base_model": str(parent)}))
    assert base_formats(second) == TINY_V3
    (first / "flywheel_rft.json").write_text(json.dumps({"stage": "rft", "base_model": str(tmp_path / "gone")}))
    assert base_formats(second) == {}
    # a policy that recorded its formats keeps them when its lineage's folders are gone (a home moved elsewhere)
    (second / "flywheel_rft.json").write_text(json.dumps({"stage": "rft", "base_model": str(tmp_path / "gone"),
                                                          "base_formats": TINY_V3}))
    assert base_formats(second) == TINY_V3


def test_variant_references_enter_the_data_only_when_asked(tiny_model):
    model, tok = tiny_model
    _, tasks = _production_only("math", 2)
    pool = [dataclasses.replace(t, meta={**(t.meta or {}), "source": POOL}) for t in tasks]
    cfg = RftConfig(tasks_per_domain={"math": 6}, samples_per_task=1, pool_samples_per_task=1, variants_per_task=2,
                    replay_share=0.0, reference_solutions=False, max_new_tokens=8, steps=1, batch_size=2)
    plain, _ = collect_examples(cfg, model, tok, pool, score, formats=TINY_V3)
    taught, _ = collect_examples(cfg.replace(reference_solutions=True), model, tok, pool, score, formats=TINY_V3)
    assert not [e for e in plain if e.source == "reference"]
    refs = [e for e in taught if e.source == "reference"]
    assert len(refs) == 4 and not {e.task_id for e in refs} & {t.task_id for t in pool}  # variants only
    assert all("Answer: " in e.response for e in refs)


def test_replay_anchors_are_the_replay_tasks_gold_all_or_only_where_no_sample_passed():
    from flywheel.tasks.sources import REPLAY
    from flywheel.tasks.suites import train_suite
    from flywheel.train.rft.data import Candidate, replay_anchors
    from flywheel.verifiers.verdict import Verdict

    replay = [dataclasses.replace(t, meta={**(t.meta or {}), "source": REPLAY}) for t in train_suite("math", 3)]
    _, mined = _production_only("math", 1)
    pool = [dataclasses.replace(mined[0], meta={**(mined[0].meta or {}), "source": POOL})]
    solved = Candidate(replay[0], "x", "policy", verdict=Verdict(1.0, True, "ok"))
    failed = Candidate(replay[1], "y", "policy", verdict=Verdict(0.0, False, "wrong"))
    chosen = pool + replay
    assert replay_anchors(chosen, [solved, failed], "none", TINY_V3) == []
    every = replay_anchors(chosen, [solved, failed], "all", TINY_V3)
    assert [c.task.task_id for c in every] == [t.task_id for t in replay]  # never the pool's
    assert all(c.source == "reference" and c.response == scratchpad(c.task.solution) for c in every)
    assert all(score("math", c.task.verifier_task(), c.response).passed for c in every)
    assert [c.task.task_id for c in replay_anchors(chosen, [solved, failed], "failed", TINY_V3)] == \
        [replay[1].task_id, replay[2].task_id]  # an unsampled task has no passing sample either
