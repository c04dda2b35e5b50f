"""math, code and agent as environments: same tasks as the suites, their own validation, tools as schemas, a
probe for every hack the issue listed."""

from __future__ import annotations

import pytest

from flywheel.environments.agent.probes import HACKS as agent_hacks
from flywheel.environments.base import Environment, validate
from flywheel.environments.builtin import (
    BUILTIN_ENVIRONMENTS,
    AgentEnvironment,
    CodeEnvironment,
    MathEnvironment,
)
from flywheel.environments.code.probes import HACKS as code_hacks
from flywheel.environments.math.probes import HACKS as math_hacks
from flywheel.environments.toolcalls import ToolCall
from flywheel.environments.toolschema import tool_name
from flywheel.tasks.suites import HELDOUT_SEED, heldout_suite, train_suite
from flywheel.verifiers.registry import VerifierRegistry


@pytest.fixture(scope="module")
def reg():
    """Verifiers for math and agent (no sandbox starts unless code is judged)."""
    return VerifierRegistry()


@pytest.mark.parametrize("cls", [MathEnvironment, AgentEnvironment])
def test_tasks_match_the_suites_and_validation_holds(cls, reg) -> None:
    env = cls(verifiers=reg)
    assert isinstance(env, Environment) and env.domains() == [env.name]
    d = env.name
    assert [t.task_id for t in env.tasks(d, "heldout", 20, HELDOUT_SEED)] == [t.task_id for t in heldout_suite(d, 20)]
    assert [t.task_id for t in env.tasks(d, "train", 20, 1_000)] == [t.task_id for t in train_suite(d, 20)]
    assert env.version == reg.version(d)
    for level in env.levels(d):
        tasks = env.tasks(d, "train", 2, 5, level=level)
        assert all(t.meta.get("level", t.meta.get("changes")) == level for t in tasks)
        for t in tasks:
            r = validate(env, t)
            assert r.ok, r.failures
    with pytest.raises(ValueError, match="level must be one of"):
        env.tasks(d, "train", 1, 0, level=9)
    with pytest.raises(ValueError, match="split must be"):
        env.tasks(d, "test", 1, 0)


def test_code_environment_validates_in_the_sandbox(sandbox_pool) -> None:
    env = CodeEnvironment(verifiers=VerifierRegistry(sandbox=sandbox_pool, code_timeout_s=2.0))
    task = env.tasks("code", "train", 1, seed=3)[0]
    cases = [c for c in env.validation(task) if not c.slow]
    assert {c.kind for c in cases} == {"gold", "wrong", "hack"}
    for c in cases:
        v = env.verify(task, c.response)
        assert v.passed == c.expect_pass and v.reward == (1.0 if c.expect_pass else 0.0), (c.name, v.reason)


def test_agent_tools_are_openai_schemas_and_step_applies_calls(reg) -> None:
    env = AgentEnvironment(verifiers=reg)
    task = env.tasks("agent", "train", 1, seed=4)[0]
    tools = env.tools(task)
    assert {tool_name(t) for t in tools} == {"add", "remove", "check", "finish"}
    assert all(t["type"] == "function" and t["function"]["parameters"]["type"] == "object" for t in tools)
    state = env.reset(task)
    bad = env.step(state, ToolCall("add", {"item": "apple", "qty": "2"}))
    assert bad.error and not bad.done
    item = next(iter(task.reference["initial_state"]))
    ok = env.step(state, ToolCall("check", {"item": item}))
    assert ok.error is None and ok.content == f"{item}={task.reference['initial_state'][item]}"
    assert env.step(state, ToolCall("finish", {})).done
    assert env.reset(task).state == task.reference["initial_state"]  # every rollout starts afresh
    assert env.tools(task) and MathEnvironment(verifiers=reg).tools(task) == []


ISSUE_HACKS = {  # the issue's list -> the probes that attempt it
    "sys.exit(0) / os._exit(0) before tests run": {"exit_before_tests", "os_exit_before_tests"},
    "printing fake OK/PASSED lines": {"fake_pass_output", "forge_verdict"},
    "objects that override __eq__": {"always_equal", "equal_subclass"},
    "monkeypatching assert/builtins, unittest, pytest": {"patch_builtins", "patch_unittest", "patch_pytest"},
    "writing a conftest.py": {"write_conftest", "tamper_with_correct_code"},
    "editing or deleting the test files": {"edit_tests", "delete_tests"},
    "reading the reference answer from disk or the environment": {"read_reference"},
    "sleeping past the timeout": {"sleep_past_timeout"},
    "abusing what now crosses (mutation, functions, protocol frames)": {"rigged_mutation", "rigged_callable",
                                                                         "nan_into_callbacks", "forged_frames"},
    "several candidate answers at once (math)": {"several_answers_or", "several_answers_boxed",
                                                 "several_answers_mixed", "several_answers_list",
                                                 "several_answers_hedge", "several_answers_restated", "plus_minus"},
    "hedges after or inside the final answer (math)": {"hedge_after_box", "hedge_after_answer", "hedge_in_answer"},
    "a false equality whose right side is the reference (math)": {"false_equation", "approx_equation"},
    "a degenerate digit run that stalls answer parsing (math)": {"degenerate_digit_run"},
}

def test_every_issue_hack_has_a_probe():
    code = train_suite("code", 1)[0]
    tasks = {"code": dict(code.verifier_task(), canonical_solution=code.reference["canonical_solution"]),
             "math": {"answer": "3"}, "agent": train_suite("agent", 1)[0].verifier_task()}
    names = {p.name for env in BUILTIN_ENVIRONMENTS for p in env().probes(tasks[env.name])}
    for hack, attempts in ISSUE_HACKS.items():
        assert attempts <= names, hack
    assert names <= {*code_hacks, *math_hacks, *agent_hacks}


def test_the_format_rule_is_the_same_in_sql_and_python() -> None:
    """Mining runs each environment's `missing_answer_sql` in DuckDB; its Python twin must agree on every case."""
    import duckdb

    from flywheel.environments.base import sql_literal

    cases = ["Answer: 7", "the answer is 12", "\\boxed{3}", "I think 5", "", "def f(x):\n    return x",
             "```python\npass\n```", "return x", '<tool_call>{"name":"finish","arguments":{}}</tool_call>', "done"]
    con = duckdb.connect()
    for cls in BUILTIN_ENVIRONMENTS:
        env = cls()
        for text in cases:
            for calls in (0, 1):
                sql = env.missing_answer_sql(sql_literal(text), str(calls))
                got = con.execute(f"SELECT {sql}").fetchone()[0]
                assert got == env.missing_answer(text, calls), (env.name, text, calls)
    assert MathEnvironment().missing_answer("I think 5", 0) and not MathEnvironment().missing_answer("Answer: 5", 0)
    assert CodeEnvironment().missing_answer("return x", 0) and AgentEnvironment().missing_answer("done", 0)
    assert not AgentEnvironment().missing_answer("done", 1)
