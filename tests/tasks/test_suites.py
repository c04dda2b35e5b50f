"""Task suites: deterministic, split cleanly, and every gold solution is well formed."""

from __future__ import annotations

from flywheel.tasks.agent_env import IllegalCall, InventoryEnv
from flywheel.tasks.suites import DOMAINS, heldout_suite, train_suite
from flywheel.tasks.toolcalls import parse_calls


def test_suites_are_deterministic_and_disjoint():
    for d in DOMAINS:
        a, b = train_suite(d, 50), train_suite(d, 50)
        assert [t.task_id for t in a] == [t.task_id for t in b]
        held = {t.prompt for t in heldout_suite(d)}
        assert held and not held & {t.prompt for t in train_suite(d, 500)}


def test_agent_gold_solution_reaches_goal():
    for t in train_suite("agent", 30):
        env = InventoryEnv.from_initial(t.reference["initial_state"])
        for call in parse_calls(t.solution):
            assert call.error is None
            env.call(call.name, call.arguments)
        assert env.done and env.goal_reached(t.reference["goal"])


def test_agent_env_rejects_illegal_calls():
    env = InventoryEnv.from_initial({"apple": 1})
    for name, args in [("fly", {}), ("add", {"item": "apple"}), ("add", {"item": "apple", "qty": -1}),
                       ("remove", {"item": "apple", "qty": 5})]:
        try:
            env.call(name, args)
        except IllegalCall:
            pass
        else:
            raise AssertionError(f"{name}{args} was accepted")
    assert env.state == {"apple": 1}
    env.call("finish", {})
    try:
        env.call("check", {"item": "apple"})
    except IllegalCall as e:
        assert "after the episode ended" in str(e)
    else:
        raise AssertionError("call after finish accepted")


def test_code_gold_solutions_pass_their_tests():
    for t in train_suite("code", 40):
        ns: dict = {}
        exec(t.prompt + t.reference["canonical_solution"], ns)
        exec(t.reference["test"], ns)
        ns["check"](ns[t.reference["entry_point"]])
