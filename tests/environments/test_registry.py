"""Discovery through entry points, clear errors for broken plugins, and the verifier registry's fallback."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import duckdb
import pytest

from flywheel.cli import main
from flywheel.environments.registry import EnvironmentRegistry, UnknownDomainError, reload_environments
from flywheel.environments.verdict import TaskError
from flywheel.tasks.suites import domain_suite, heldout_suite
from flywheel.verifiers.batch import score_batch
from flywheel.verifiers.cache import VerdictCache
from flywheel.verifiers.registry import EnvironmentVerifier, VerifierRegistry


def _fake_dist(root: Path, name: str, entry_points: dict[str, str], module: str = "") -> None:
    """A real installed distribution on sys.path: a dist-info folder with METADATA and entry_points.txt."""
    info = root / f"{name}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    eps = "".join(f"{k} = {v}\n" for k, v in entry_points.items())
    (info / "entry_points.txt").write_text(f"[flywheel.environments]\n{eps}")
    if module:
        (root / f"{name.replace('-', '_')}.py").write_text(textwrap.dedent(module))


def test_installed_environments_serve_at_least_50_domains() -> None:
    reg = EnvironmentRegistry()
    doms = reg.domains()
    assert len(doms) >= 50 and {"math", "code", "agent"} <= set(doms) and not reg.errors
    assert reg.family_of("rg.gcd") == "reasoning-gym" and reg.family_of("math") == "builtin"
    assert "flywheel" in str(reg.sources()["reasoning-gym"])
    with pytest.raises(UnknownDomainError, match="unknown domain 'nope'.*flywheel envs list"):
        reg.for_domain("nope")


def test_broken_plugins_are_named_and_the_others_still_load(tmp_path, monkeypatch) -> None:
    _fake_dist(tmp_path, "broken-envs", {
        "missing": "no_such_module_xyz:Env",
        "notanenv": "broken_envs:NotAnEnv",
        "thief": "broken_envs:Thief",
    }, module='''
        class NotAnEnv:
            name = "x"
        class Thief:
            name, version, family = "thief", "1", "t"
            def domains(self): return ["math"]
            tasks = task_count = tools = reset = step = verify = validation = lambda *a: None
    ''')
    monkeypatch.syspath_prepend(str(tmp_path))
    reg = EnvironmentRegistry()
    errs = " | ".join(reg.errors)
    assert "entry point 'missing' = 'no_such_module_xyz:Env'" in errs and "broken-envs 0.1" in errs
    assert "ModuleNotFoundError" in errs
    assert "'notanenv'" in errs and "is not an Environment: missing" in errs
    assert "domain 'math' is claimed twice" in errs and "'thief'" in errs
    assert reg.for_domain("math").name == "math" and len(reg.domains()) >= 50
    with pytest.raises(UnknownDomainError, match="3 environment\\(s\\) failed to load"):
        reg.for_domain("thief")
    reload_environments()
    try:
        assert main(["envs", "list", "--json"]) == 1
    finally:
        monkeypatch.undo()
        reload_environments()


def test_envs_list_json(capsys) -> None:
    assert main(["envs", "list", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["domains"] >= 50 and out["errors"] == []
    rg = next(e for e in out["environments"] if e["name"] == "reasoning-gym")
    assert rg["family"] == "reasoning-gym" and rg["version"].startswith("rg-")
    assert any(d["levels"] for d in rg["domains"]) and all(d["domain"].startswith("rg.") for d in rg["domains"])
    assert main(["envs", "list"]) == 0
    assert "reasoning-gym  family=reasoning-gym" in capsys.readouterr().out


def test_verifier_registry_falls_back_to_environments_and_the_cache_keys_on_their_version() -> None:
    vreg = VerifierRegistry()
    v = vreg.get("rg.gcd")
    assert isinstance(v, EnvironmentVerifier) and v.name == "rg.gcd" and v.version.startswith("rg-1+")
    with pytest.raises(TaskError, match="unknown domain 'rg.nope'"):
        vreg.get("rg.nope")
    task = domain_suite("rg.gcd", 1, seed=2)[0]
    assert heldout_suite("rg.gcd", 3) and task.verifier_task()["task_id"] == task.task_id
    cache = VerdictCache(duckdb.connect())
    items = [("rg.gcd", task.verifier_task(), task.solution), ("rg.gcd", task.verifier_task(), "Answer: -1")]
    assert [x.reward for x in score_batch(items, registry=vreg, cache=cache)] == [1.0, 0.0]
    assert cache.count() == 2 and cache.get_many([]) == {}
    assert [x.reward for x in score_batch(items, registry=vreg, cache=cache)] == [1.0, 0.0]
    assert cache.hits == 2
    v.env.version = "rg-2-bumped"  # a new environment version: every cached verdict is a miss
    score_batch(items, registry=vreg, cache=cache)
    assert cache.hits == 2 and cache.count() == 4
    bad = score_batch([("rg.gcd", {"task_id": "t", "prompt": "p"}, "Answer: 1")], registry=vreg)[0]
    assert bad.details.get("error") == "task"
