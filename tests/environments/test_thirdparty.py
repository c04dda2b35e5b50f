"""Bring your own environment: a package from tests/, pip-installed, is discovered, listed and verified.

The package (tests/environments/thirdparty_env) knows flywheel only through the protocol and its own
entry point; nothing in flywheel names it. Installed with `pip install --target` (offline, no deps,
no build isolation) and put on sys.path, as a site-packages install would.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from flywheel.cli import main
from flywheel.environments.base import validate
from flywheel.environments.registry import reload_environments
from flywheel.evaluation.suites import EvalConfig, eval_tasks
from flywheel.tasks.suites import domain_suite
from flywheel.verifiers.batch import score_batch
from flywheel.verifiers.registry import VerifierRegistry

PKG = Path(__file__).parent / "thirdparty_env"


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    target = tmp_path_factory.mktemp("site")
    src = tmp_path_factory.mktemp("src") / "thirdparty_env"
    shutil.copytree(PKG, src)  # pip builds in the source folder: keep tests/ clean
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                    "--no-index", "--target", str(target), str(src)], check=True, timeout=300)
    sys.path.insert(0, str(target))
    reg = reload_environments()
    yield reg
    sys.path.remove(str(target))
    sys.modules.pop("flywheel_sumenv", None)
    reload_environments()


def test_discovered_and_listed(installed, capsys) -> None:
    env = installed.for_domain("sum.tool")
    assert env.family == "thirdparty" and "flywheel-sumenv 0.1.0" in str(installed.sources()["sumenv"])
    assert installed.errors == []
    assert main(["envs", "list", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    row = next(e for e in out["environments"] if e["name"] == "sumenv")
    assert row["version"] == "sumenv-1" and row["domains"][0]["domain"] == "sum.tool"


def test_its_tasks_verify_through_flywheel(installed) -> None:
    env = installed.for_domain("sum.tool")
    tasks = domain_suite("sum.tool", 4, seed=3)
    assert len(tasks) == 4 and all(validate(env, t).ok for t in tasks)
    items = [("sum.tool", t.verifier_task(), r) for t in tasks for r in (t.solution, "The total is 3.")]
    verdicts = score_batch(items, registry=VerifierRegistry(environments=installed))
    assert [v.reward for v in verdicts] == [1.0, 0.0] * 4
    suites = eval_tasks(EvalConfig(tasks_per_domain={"sum.tool": 3}))
    assert [t.domain for t in suites["sum.tool"]] == ["sum.tool"] * 3
