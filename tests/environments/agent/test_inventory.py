"""The inventory environment: gold trajectories reach the goal, illegal calls are refused and change nothing."""

from __future__ import annotations

from flywheel.environments.agent.inventory import IllegalCall, InventoryEnv
from flywheel.environments.toolcalls import parse_calls
from flywheel.tasks.suites import train_suite


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
