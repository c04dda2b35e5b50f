"""The verifier registry follows the installed environments: a plug-in installed into the running process
(and a `reload_environments()`) is seen; it used to keep the first environment registry it saw."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from flywheel.environments.registry import default_environments, reload_environments
from flywheel.environments.verdict import TaskError
from flywheel.tasks.suites import domain_suite
from flywheel.verifiers.registry import VerifierRegistry

SRC = Path(__file__).parents[1] / "environments" / "thirdparty_env" / "src" / "flywheel_sumenv"


def _install(site: Path) -> None:
    """Install the test plug-in the way pip lays it out (package + dist-info with its entry point)."""
    shutil.copytree(SRC, site / "flywheel_sumenv")
    info = site / "flywheel_sumenv-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: flywheel-sumenv\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text('[flywheel.environments]\nsumenv = flywheel_sumenv:SumEnvironment\n')


@pytest.fixture
def site(tmp_path):
    sys.path.insert(0, str(tmp_path))
    yield tmp_path
    sys.path.remove(str(tmp_path))
    sys.modules.pop("flywheel_sumenv", None)
    reload_environments()


def test_a_plugin_installed_after_first_use_is_known(site) -> None:
    reg = VerifierRegistry()
    assert reg.get("math").version  # the registry has now seen (and cached) the installed environments
    with pytest.raises(TaskError, match="unknown domain 'sum.tool'"):
        reg.get("sum.tool")
    _install(site)  # installed into the running process, no reload_environments() called
    reg._looked_at = 0.0  # noqa: SLF001 -- skip the one-second rescan throttle instead of sleeping
    task = domain_suite("math", 1, seed=0)[0]  # a domain known before still works
    assert reg.get("math").verify(task.verifier_task(), task.solution).reward == 1.0
    v = reg.get("sum.tool")
    assert v.version == "sumenv-1" and default_environments().has_domain("sum.tool")
    t = domain_suite("sum.tool", 1, seed=1)[0]
    assert v.verify(t.verifier_task(), t.solution).reward == 1.0


def test_verifiers_follow_a_reload(site) -> None:
    reg = VerifierRegistry()
    before = reg.get("math")
    assert reg.get("math") is before  # cached while the installed environments are the same
    _install(site)
    reload_environments()
    assert reg.get("math") is not before  # rebuilt from the reloaded registry
    assert reg.get("sum.tool").version == "sumenv-1"


def test_an_unknown_domain_rescans_at_most_once_a_second(site, monkeypatch) -> None:
    reg = VerifierRegistry()
    scans = []
    real = reload_environments

    def counting():
        scans.append(1)
        return real()

    monkeypatch.setattr("flywheel.verifiers.registry.reload_environments", counting)
    for _ in range(50):
        with pytest.raises(TaskError):
            reg.get("no.such.domain")
    assert scans == []  # nothing new installed: the environments are not reloaded
    _install(site)
    reg._looked_at = 0.0  # noqa: SLF001
    for _ in range(50):
        with pytest.raises(TaskError):
            reg.get("no.such.domain")
    assert len(scans) == 1  # a new plug-in: one reload, then no scan for the rest of the second


def test_given_environments_are_never_replaced(site) -> None:
    from flywheel.environments.registry import EnvironmentRegistry

    envs = EnvironmentRegistry([default_environments().for_domain("math")])
    reg = VerifierRegistry(environments=envs)
    _install(site)
    with pytest.raises(TaskError):
        reg.get("sum.tool")
    assert reg.environments() is envs
