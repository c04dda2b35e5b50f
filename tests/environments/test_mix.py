"""Many-domain mixes: patterns in config, a stream mixing 20+ domains, failure-share weights, a report per domain."""

from __future__ import annotations

import json

import pytest

from flywheel.environments.mix import expand_counts, expand_weights
from flywheel.evaluation.families import family_metrics
from flywheel.evaluation.report import to_markdown, write_report
from flywheel.evaluation.runner import compare, evaluate
from flywheel.evaluation.suites import EvalConfig, eval_tasks
from flywheel.rollout.types import Rollout
from flywheel.tasks.sources import tagged
from flywheel.tasks.suites import train_suite
from flywheel.train.config import GRPOConfig
from flywheel.train.grpo.scheduler import TaskScheduler, pool_failure_weights


def test_patterns_expand_to_domains() -> None:
    w = expand_weights({"math": 0.5, "rg.*": 0.5})
    rg = [d for d in w if d.startswith("rg.")]
    assert len(rg) >= 50 and abs(sum(w[d] for d in rg) - 0.5) < 1e-9 and w["math"] == 0.5
    fam = expand_weights({"family:reasoning-gym": 1.0, "rg.gcd": 2.0})
    assert fam["rg.gcd"] == 2.0 and len(fam) == len(rg)
    assert expand_counts({"rg.g*": 7}) == {"rg.game_of_life": 7, "rg.gcd": 7, "rg.group_anagrams": 7}
    assert expand_weights({"math": 1.0}) == {"math": 1.0}  # built-ins alone never load the registry
    with pytest.raises(ValueError, match="'rg.nope' matches no installed domain"):
        expand_weights({"rg.nope": 1.0})
    with pytest.raises(ValueError, match="'family:poetry' matches no installed domain"):
        GRPOConfig(domain_weights={"family:poetry": 1.0})
    assert GRPOConfig().domain_weights == {"math": 0.8, "code": 0.1, "agent": 0.1}  # the default is unchanged


def test_one_batch_mixes_more_than_20_domains() -> None:
    cfg = GRPOConfig(domain_weights={"math": 0.2, "rg.*": 0.8})
    doms = [d for d in cfg.domain_weights if d.startswith("rg.")][:30] + ["math"]
    tasks = tagged([t for d in doms for t in train_suite(d, 4)], "replay")
    sched = TaskScheduler(tasks, {d: cfg.domain_weights.get(d, 0.02) for d in doms}, seed=1)
    batch = sched.sample(64, step=0)
    assert len({t.domain for t in batch}) >= 20 and len(batch) == 64


def test_failure_share_weights_follow_the_mined_pool() -> None:
    math_t, rg_t = train_suite("math", 6), train_suite("rg.gcd", 6)
    tasks = tagged(math_t[:1] + rg_t[:3], "pool") + tagged(math_t[1:] + rg_t[3:], "replay")
    w = pool_failure_weights(tasks, {"math": 0.5, "rg.gcd": 0.5})
    assert w == {"math": 0.25, "rg.gcd": 0.75}
    sched = TaskScheduler(tasks, {"math": 0.5, "rg.gcd": 0.5}, domain_mix="pool_failures")
    assert sched.domain_weights == {"math": 0.25, "rg.gcd": 0.75}
    assert pool_failure_weights(tagged(math_t, "replay"), {"math": 1.0}) == {"math": 1.0}


def _gold_or_wrong(tasks, config):
    """A policy that solves every third task: gold text, else a wrong answer."""
    out = []
    for i, t in enumerate(tasks):
        text = t.solution if i % 3 == 0 else "Answer: -12345"
        out.append([Rollout(t.prompt, [1], [2, 3], [0.0, 0.0], [1, 1], text, 0, t.task_id, t.domain)
                    for _ in range(config.n_samples)])
    return out


def test_eval_report_has_a_row_per_domain_rolled_up_by_family(tmp_path) -> None:
    cfg = EvalConfig(tasks_per_domain={"math": 2}, domain_tasks={"rg.*": 2}, n_samples=2, greedy=False, n_boot=50,
                     suites=("heldout",))
    assert len(cfg.domains) >= 51 and cfg.domains[0] == "math"
    tasks = eval_tasks(cfg)
    rep = evaluate(_gold_or_wrong, cfg, model="cand", tasks=tasks)
    assert {t.domain for t in rep.tasks} == set(cfg.domains)
    fams = family_metrics(rep)
    assert list(fams) == ["reasoning-gym"] and fams["reasoning-gym"]["pass@1"].n == 2 * (len(cfg.domains) - 1)
    base = evaluate(_gold_or_wrong, cfg, model="base", tasks=tasks)
    md = to_markdown(rep, base, compare(rep, base))
    assert "| rg.gcd |" in md and "### By family" in md and "| reasoning-gym |" in md
    assert "wrong_answer" in md  # environments' failure types are their reasons' heads
    paths = write_report(tmp_path, rep, base, compare(rep, base))
    fam_json = json.loads(paths["json"].read_text())["families"]
    assert fam_json["diff_pass@1"]["reasoning-gym"]["value"] == 0.0
    assert paths["chart"].stat().st_size > 1000
