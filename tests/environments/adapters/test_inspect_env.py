"""An Inspect task package (tests/environments/adapters/inspect_arith_env), pip-installed, is a flywheel
environment: listed, its samples split into tasks, Inspect's own match() scorer the reward, evaluated through
flywheel's suites, with nothing in flywheel naming it."""

from __future__ import annotations

import json

import pytest

from flywheel.cli import main
from flywheel.environments.base import validate
from flywheel.evaluation.suites import EvalConfig, eval_tasks
from flywheel.tasks.suites import domain_suite
from flywheel.verifiers.batch import score_batch
from flywheel.verifiers.registry import VerifierRegistry

pytest.importorskip("inspect_ai")


@pytest.fixture(scope="module")
def installed(install_env):
    return install_env("inspect_arith_env", "inspect_arith")


def test_listed_and_split(installed, capsys) -> None:
    env = installed.for_domain("inspect.arith-qa")
    assert env.family == "inspect" and env.version.startswith("inspect-arith-qa-0-") and installed.errors == []
    assert main(["envs", "list", "--json"]) == 0
    row = next(e for e in json.loads(capsys.readouterr().out)["environments"] if e["name"] == "arith-qa")
    assert row["domains"][0]["domain"] == "inspect.arith-qa"
    train, held = (env.task_count("inspect.arith-qa", s) for s in ("train", "heldout"))
    assert train + held == 40 and 0 < held < train
    assert not ({t.prompt for t in env.tasks("inspect.arith-qa", "train", 40, 0)}
                & {t.prompt for t in env.tasks("inspect.arith-qa", "heldout", 40, 0)})


def test_inspects_scorer_is_the_reward(installed) -> None:
    env = installed.for_domain("inspect.arith-qa")
    tasks = domain_suite("inspect.arith-qa", 4, seed=5)
    assert all(validate(env, t).ok for t in tasks)
    t = tasks[0]
    right = int(t.solution)
    items = [("inspect.arith-qa", t.verifier_task(), r) for r in (
        f"Adding them gives {right}", f"It is {right + 1}", [{"role": "assistant", "content": f"= {right}"}],
        f"{right} is my guess, or maybe 7")]
    v = score_batch(items, registry=VerifierRegistry(environments=installed))
    assert [x.passed for x in v] == [True, False, True, False]
    assert v[1].details["scores"] == [0.0] and v[0].reward == 1.0
    suites = eval_tasks(EvalConfig(tasks_per_domain={"inspect.arith-qa": 3}))
    assert [x.domain for x in suites["inspect.arith-qa"]] == ["inspect.arith-qa"] * 3
