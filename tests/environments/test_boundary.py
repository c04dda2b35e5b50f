"""The plug-in boundary: a misbehaving plug-in's verdicts become error verdicts naming it, never rewards.

`Wild` is a real plug-in environment (the protocol, nothing stubbed) whose `verify` returns whatever
the response asks for: the faults a red team found reaching the trainer unchecked.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass

import pytest

from flywheel.cli import main
from flywheel.environments import boundary, registry
from flywheel.environments.base import BaseEnvironment, Task, Verdict
from flywheel.environments.registry import EnvironmentRegistry
from flywheel.verifiers.batch import make_reward_func, score_batch
from flywheel.verifiers.registry import VerifierRegistry


@dataclass(frozen=True)
class LooseVerdict(Verdict):
    """A plug-in's own Verdict subclass that skips the finiteness check."""

    def __post_init__(self) -> None:
        pass


class Wild(BaseEnvironment):
    name, version, family = "wild", "wild-1", "wild"

    def domains(self) -> list[str]:
        return ["wild.x"]

    def tasks(self, domain, split, n, seed, level=None):
        return [Task(f"wild-{i}", domain, "say ok", {"answer": "ok"}, "ok") for i in range(n)]

    def verify(self, task, response):
        return {
            "ok": Verdict(1.0, True, "fine"),
            "float": 1.0,
            "two": Verdict(2.0, True, "more than full"),
            "neg": Verdict(-1.0, False, "below zero"),
            "nan": LooseVerdict(math.nan, False, "nan"),
            "pass_zero": Verdict(0.0, True, "a pass worth nothing"),
            "fail_full": Verdict(1.0, False, "a failure worth everything"),
            "nan_details": Verdict(0.0, False, "x", {"score": math.nan}),
            "hang": None,
        }[response] if response != "hang" else time.sleep(3600)


def _reg() -> VerifierRegistry:
    return VerifierRegistry(environments=EnvironmentRegistry([Wild()]))


BAD = ["float", "two", "neg", "nan", "pass_zero", "fail_full", "nan_details"]


def test_check_refuses_each_fault_naming_the_plugin() -> None:
    env = Wild()
    t = env.tasks("wild.x", "train", 1, 0)[0]
    assert boundary.check(env.verify(t, "ok"), "wild").reward == 1.0
    for r in BAD:
        with pytest.raises(boundary.PluginError, match="plug-in wild"):
            boundary.check(env.verify(t, r), "wild")


def test_score_batch_turns_bad_verdicts_into_error_verdicts() -> None:
    items = [("wild.x", {"task_id": "w", "prompt": "p", "answer": "ok"}, r) for r in ["ok", *BAD]]
    out = score_batch(items, registry=_reg())
    assert out[0].reward == 1.0 and out[0].passed
    for r, v in zip(BAD, out[1:], strict=True):
        assert v.reward == 0.0 and not v.passed and v.details["error"] == "plugin", r
        assert "'wild'" in v.reason, v.reason


def test_reward_func_gives_none_for_a_broken_plugin() -> None:
    f = make_reward_func("wild.x", registry=_reg())
    got = f(["p"] * 4, ["ok", "two", "nan", "float"], task=[{"task_id": "w", "prompt": "p", "answer": "ok"}] * 4)
    assert got == [1.0, None, None, None]


def test_verify_cli_json_stays_json_with_a_broken_plugin(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setattr(registry, "_DEFAULT", EnvironmentRegistry([Wild()]))
    monkeypatch.setattr("flywheel.verifiers.registry._DEFAULT", None)
    f = tmp_path / "in.jsonl"
    lines = [{"domain": "wild.x", "task": {"task_id": "w", "prompt": "p"}, "response": r} for r in ["ok", *BAD]]
    f.write_text("".join(json.dumps(x) + "\n" for x in lines))
    code = main(["verify", str(f), "--json"])
    out = capsys.readouterr().out
    rows = [json.loads(line, parse_constant=lambda c: pytest.fail(f"{c} in --json output")) for line in
            out.splitlines()]
    assert code == 1 and len(rows) == len(lines)
    assert rows[0]["passed"] and all(r["details"]["error"] == "plugin" for r in rows[1:])


def test_a_hanging_plugin_times_out_and_the_process_exits(tmp_path) -> None:
    """The verify call is abandoned at the deadline; the hung thread does not keep the interpreter alive."""
    prog = textwrap.dedent(f"""
        import sys, json
        sys.path.insert(0, {str(__import__("pathlib").Path(__file__).parent)!r})
        from test_boundary import _reg
        from flywheel.verifiers.batch import score_batch
        v = score_batch([("wild.x", {{"task_id": "w", "prompt": "p"}}, "hang")], registry=_reg(), item_timeout_s=1)[0]
        print(json.dumps(v.to_dict()))
    """)
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    v = json.loads(p.stdout.strip().splitlines()[-1])
    assert v["details"]["error"] == "plugin" and "did not finish within 1s" in v["reason"]
    assert time.monotonic() - t0 < 30


def test_a_plugin_hanging_at_import_is_reported_not_waited_on(tmp_path, monkeypatch) -> None:
    (tmp_path / "hangs_at_import.py").write_text("import time\ntime.sleep(3600)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "IMPORT_DEADLINE_S", 1.0)
    monkeypatch.setattr(registry, "BUILTIN", {**registry.BUILTIN, "hangs": "hangs_at_import:Env"})
    reg = EnvironmentRegistry()
    errors = [e for e in reg.errors if "hangs_at_import" in e]
    assert len(errors) == 1 and "import did not finish within 1s" in errors[0], reg.errors
    assert "rg.countdown" in reg.domains()  # the others still load


class HangsCounting(Wild):
    name = "hangs-counting"

    def task_count(self, domain, split):
        time.sleep(3600)


def test_envs_list_reports_a_plugin_hanging_in_task_count(monkeypatch):
    from flywheel.environments import catalog

    monkeypatch.setattr(catalog, "IMPORT_DEADLINE_S", 0.5)
    t0 = time.monotonic()
    cat = catalog.catalog(EnvironmentRegistry([HangsCounting()]))
    assert time.monotonic() - t0 < 5  # asked once, not once per domain and split
    assert cat["environments"][0]["domains"][0]["train"] is None
    assert cat["errors"] == ["plug-in 'hangs-counting': task_count did not finish within 0.5s"]
