"""The protocol's shared pieces: the process check over OpenAI tool schemas, and `validate`."""

from __future__ import annotations

import pytest

from flywheel.environments.base import (
    BaseEnvironment,
    Environment,
    ValidationCase,
    is_heldout,
    task_from_dict,
    validate,
)
from flywheel.environments.task import Task, stable_task_id
from flywheel.environments.toolcalls import ToolCall
from flywheel.environments.toolschema import call_error, function_tool, process_error
from flywheel.environments.verdict import failed, passed

TOOLS = [
    function_tool("add", "Add qty of item.", {"item": {"type": "string", "minLength": 1},
                                              "qty": {"type": "integer", "minimum": 1}}),
    function_tool("finish", "End."),
]


@pytest.mark.parametrize("call, reason", [
    (ToolCall("add", {"item": "a", "qty": 2}), None),
    (ToolCall("finish", {}), None),
    (ToolCall("add", {"item": "a", "qty": "2"}), "must be integer"),
    (ToolCall("add", {"item": "a", "qty": True}), "must be integer"),
    (ToolCall("add", {"item": "a", "qty": 0}), ">= 1"),
    (ToolCall("add", {"item": "", "qty": 1}), "at least 1"),
    (ToolCall("add", {"item": "a"}), "missing required ['qty']"),
    (ToolCall("add", {"item": "a", "qty": 1, "force": True}), "unexpected ['force']"),
    (ToolCall("set", {}), "unknown tool 'set'"),
    (ToolCall("", {}, "{", "tool call is not valid JSON"), "not valid JSON"),
])
def test_call_error(call: ToolCall, reason: str | None) -> None:
    err = call_error(TOOLS, call)
    assert (err is None) if reason is None else (reason in err)


def test_process_error_names_the_first_illegal_call() -> None:
    calls = [ToolCall("add", {"item": "a", "qty": 1}), ToolCall("add", {"item": "a", "qty": -1}), ToolCall("x", {})]
    assert process_error(TOOLS, calls).startswith("call 2: add:")
    assert process_error(TOOLS, calls[:1]) is None


class _Echo(BaseEnvironment):
    """Answer is the prompt reversed; a deliberately sloppy verifier when `sloppy` (accepts any 'PASS')."""

    name, version, family = "echo", "echo-1", "test"

    def __init__(self, sloppy: bool = False) -> None:
        self.sloppy = sloppy

    def domains(self) -> list[str]:
        return ["echo"]

    def tasks(self, domain, split, n, seed, level=None):
        words = [f"w{seed}x{i}" for i in range(n * 5)]
        ts = [Task(stable_task_id("echo", w), "echo", w, {"answer": w[::-1]}, w[::-1]) for w in words]
        return [t for t in ts if is_heldout(t.prompt) == (split == "heldout")][:n]

    def verify(self, task, response):
        task = task_from_dict("echo", task)
        if self.sloppy and "PASS" in str(response):
            return passed()
        return passed() if str(response).strip() == task.reference["answer"] else failed("wrong")

    def hack_probes(self, task):
        return [("claim", "PASS")]


def test_validate_catches_a_verifier_that_lets_a_hack_through() -> None:
    env, sloppy = _Echo(), _Echo(sloppy=True)
    assert isinstance(env, Environment)
    task = env.tasks("echo", "train", 1, seed=3)[0]
    assert [c.kind for c in env.validation(task)] == ["gold", "wrong", "hack"]
    assert validate(env, task).ok
    bad = validate(sloppy, task)
    assert not bad.ok and bad.failures == ["hack:claim scored 1.0 (passed), expected 0.0"]


def test_task_dict_round_trip_and_splits_disjoint() -> None:
    env = _Echo()
    tr, ho = env.tasks("echo", "train", 20, 1), env.tasks("echo", "heldout", 3, 1)
    assert not {t.prompt for t in tr} & {t.prompt for t in ho}
    d = {"task_id": "t1", "prompt": "p", "answer": "x"}
    t = task_from_dict("echo", d)
    assert (t.task_id, t.prompt, t.reference) == ("t1", "p", {"answer": "x"})
    with pytest.raises(ValueError):
        ValidationCase("bogus", "x", "")


def test_a_plugin_gets_the_generic_answer_to_everything_the_library_asks_a_domain() -> None:
    """What mining, construction, rollouts, serving and evaluation ask an environment, answered by the
    defaults a plug-in inherits: judged through `verify`, no verifiers from logs, single-turn, no production."""
    env = _Echo()
    task = env.tasks("echo", "train", 1, seed=3)[0]
    assert env.verifier_task(task) == {"answer": task.reference["answer"], "task_id": task.task_id, "prompt": task.prompt}
    assert env.heldout_size("echo") == 50 and env.make_verifier(None) is None
    assert env.task_from_log("t", "p", {"answer": "x"}) is None and env.gold_response("p", {}) is None
    assert env.probes({"answer": "x"}) == [] and env.reference_sql("r") is None
    assert env.logged_solution("p", {"answer": "x"}) == ""
    env.reference_solution = lambda ref: ref.get("fix", "")  # a plug-in's gold from its logged reference
    assert env.logged_solution("p", {"fix": "done"}) == "done"
    assert not env.missing_answer("", 0) and env.missing_answer_sql("r", "n") is None
    assert env.failure_type({}, "", failed("Wrong Answer: 3")) == "wrong_answer"
    assert env.failure_type({}, "", failed("x", failure_type="Off By One")) == "off_by_one"
    assert env.tool_env(task) is None and not env.multi_turn and env.production is None
    assert env.logged_outcome({"tests_run": 3}, 2) == {}
