"""A PrimeIntellect `verifiers`-style package (tests/environments/adapters/vf_arith_env), pip-installed, is a
flywheel environment: listed, its dataset split into tasks, its rubric the reward with the model's code run in
flywheel's sandbox, and a tiny model trains a GRPO step and is evaluated on it, with nothing in flywheel naming it."""

from __future__ import annotations

import json

import pytest

from flywheel.cli import main
from flywheel.environments.base import validate
from flywheel.tasks.suites import domain_suite
from flywheel.verifiers.batch import score, score_batch
from flywheel.verifiers.registry import VerifierRegistry


@pytest.fixture(scope="module")
def installed(install_env):
    return install_env("vf_arith_env", "vf_arith")


def test_listed_with_its_version(installed, capsys) -> None:
    env = installed.for_domain("vf.arith")
    assert env.family == "verifiers" and env.version == "vf-arith-0.2.0" and installed.errors == []
    assert main(["envs", "list", "--json"]) == 0
    row = next(e for e in json.loads(capsys.readouterr().out)["environments"] if e["name"] == "arith")
    assert row["domains"][0]["domain"] == "vf.arith"


def test_splits_are_its_datasets_and_deterministic(installed) -> None:
    env = installed.for_domain("vf.arith")
    train, held = env.tasks("vf.arith", "train", 100, seed=1), env.tasks("vf.arith", "heldout", 100, seed=1)
    assert len(held) == env.task_count("vf.arith", "heldout") <= 10 and len(train) >= 25
    assert not {t.prompt for t in train} & {t.prompt for t in held}
    assert [t.task_id for t in env.tasks("vf.arith", "train", 5, seed=1)] == [t.task_id for t in train[:5]]
    assert train[0].solution.startswith("<answer>") and train[0].reference["info"]["a"] > 1


def test_its_rubric_is_the_reward_and_model_code_runs_in_the_sandbox(installed, tmp_path) -> None:
    env = installed.for_domain("vf.arith")
    tasks = domain_suite("vf.arith", 3, seed=2)
    assert all(validate(env, t).ok for t in tasks)
    t = tasks[0]
    a, b = t.reference["info"]["a"], t.reference["info"]["b"]
    marker = tmp_path / "pwned"
    items = [("vf.arith", t.verifier_task(), r) for r in (
        f"<answer>{a}*{b}</answer>", t.solution, "<answer>1</answer>", f"{a * b}",
        f"<answer>open({str(marker)!r}, 'w').write('x')</answer>")]
    v = score_batch(items, registry=VerifierRegistry(environments=installed))
    assert [x.passed for x in v] == [True, True, False, False, False]
    assert v[2].reward == 0.0 and v[2].details["score"] == pytest.approx(0.2 / 1.2) and v[2].details["rewards"]["has_tags"] == 1.0
    assert v[3].reward == 0.0 and not marker.exists()  # the expression ran in the sandbox, not here


def test_trains_and_evaluates_on_it(installed, tiny_model_dir, flywheel_home, seed_mlflow_db) -> None:
    import torch

    from flywheel.evaluation.runner import engine_generator, evaluate
    from flywheel.evaluation.suites import EvalConfig
    from flywheel.rollout import build_engine
    from flywheel.train.api import train_policy
    from flywheel.train.config import TrainConfig

    torch.set_num_threads(1)
    seed_mlflow_db(flywheel_home)
    cfg = TrainConfig(stage="rl", steps=1, prompts_per_step=2, group_size=2, max_new_tokens=16, dev_every=0,
                      domain_weights={"vf.arith": 1.0}, replay_tasks_per_domain=0, checkpoint_every=0)
    judged: list = []
    reg = VerifierRegistry(environments=installed)  # the process-wide one predates this module's install

    def score_fn(domain, task, response):
        judged.append(score(domain, task, response, registry=reg))
        return judged[-1]

    res = train_policy(cfg, tiny_model_dir, "tiny-quick", paths=flywheel_home,
                       tasks=domain_suite("vf.arith", 4, seed=0), score_fn=score_fn)
    assert res.finished and res.steps_done == 1 and (res.policy_dir / "config.json").exists()
    assert set(d for d, _, _ in res.task_counts.values()) == {"vf.arith"}
    assert len(judged) >= 4 and not any("error" in v.details for v in judged)  # judged by its rubric
    before = len(judged)
    ecfg = EvalConfig(n_samples=1, tasks_per_domain={"vf.arith": 2}, n_boot=50, max_new_tokens=16,
                      suites=("heldout",))  # its eval_dataset: the held-out suite alone (the default adds two more)
    rep = evaluate(engine_generator(build_engine("torch", str(res.policy_dir))), ecfg, model="tiny-vf", score=score_fn)
    assert len(rep.tasks) == 2 and {t.domain for t in rep.tasks} == {"vf.arith"}
    assert 0.0 <= rep.metrics["vf.arith"]["pass@1"].value <= 1.0
    assert len(judged) > before and not any("error" in v.details for v in judged)
