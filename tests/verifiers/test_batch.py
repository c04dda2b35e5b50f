"""Batch scoring entry points: the TRL-style reward function, non-dict tasks as failed verdicts, and interpreter
faults retried as the machine's (never a verdict)."""

from __future__ import annotations

import json
import threading

import pytest

from flywheel.environments import pyast
from flywheel.environments.code.verifier import extract_code
from flywheel.environments.verdict import passed
from flywheel.tasks.suites import train_suite
from flywheel.verifiers.batch import make_reward_func, score_batch
from flywheel.verifiers.registry import VerifierRegistry
from flywheel.verifiers.verdict import VerifierInfraError


def test_reward_func_trl_style():
    f = make_reward_func("agent")
    ts = train_suite("agent", 3)
    cols = {"initial_state": [t.reference["initial_state"] for t in ts], "goal": [t.reference["goal"] for t in ts],
            "tools": [json.dumps(t.reference["tools"]) for t in ts]}
    comps = [ts[0].solution, "nothing", [{"role": "assistant", "content": ts[2].solution}]]
    assert f(prompts=[t.prompt for t in ts], completions=comps, **cols) == [1.0, 0.0, 1.0]
    mixed = make_reward_func()
    rows = {"domain": ["agent", "agent"], "task": [ts[0].verifier_task(), json.dumps({"prompt": "x"})]}
    assert mixed(prompts=["a", "b"], completions=[ts[0].solution, "x"], **rows) == [1.0, None]
    assert f.__name__ == "flywheel_agent_reward"


@pytest.mark.parametrize("bad", [None, "x", 3])
def test_score_batch_rejects_non_dict_tasks(bad):
    [v] = score_batch([("agent", bad, "x")])
    assert not v.passed and v.details["error"] == "task"


class _InterpreterFault:
    """A verifier whose first `fails` calls hit an interpreter fault (CPython's AST race, gh-106905)."""

    name, version = "flaky-interpreter", "1"

    def __init__(self, fails: int) -> None:
        self.calls, self.fails = 0, fails

    def verify(self, task, response):
        self.calls += 1
        if self.calls <= self.fails:
            raise SystemError("AST constructor recursion depth mismatch (before=27, after=26)")
        return passed("ok")


def test_an_interpreter_fault_is_retried_and_never_becomes_a_verdict():
    reg = VerifierRegistry(sandbox=None)
    reg.get("math")
    reg._verifiers["math"] = flaky = _InterpreterFault(fails=2)
    item = ("math", {"prompt": "What is 1 + 1?", "answer": "2"}, "Answer: 2")
    [v] = score_batch([item], registry=reg, backoff_s=0)
    assert v.passed and flaky.calls == 3  # a machine fault: retried, not scored 0
    reg._verifiers["math"] = stuck = _InterpreterFault(fails=99)
    with pytest.raises(VerifierInfraError, match="SystemError"):
        score_batch([item], registry=reg, retries=2, backoff_s=0)
    assert stuck.calls == 3


def test_responses_are_parsed_under_one_lock_across_judging_threads():
    """Two threads building ASTs at once can raise SystemError on CPython 3.11: the code verifier's parses of a
    response wait for the process-wide lock."""
    done = threading.Event()
    response = "```python\ndef f(x):\n    return x + 1\n```"
    with pyast._LOCK:
        t = threading.Thread(target=lambda: (extract_code(response, "f"), done.set()))
        t.start()
        assert not done.wait(0.3)  # blocked on the lock
    assert done.wait(10)
    t.join()
