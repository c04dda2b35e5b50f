"""Agent reward hacking: every probe fails against the replaying verifier."""

from __future__ import annotations

from flywheel.environments.agent.probes import agent_probes
from flywheel.environments.agent.verifier import AgentVerifier
from flywheel.tasks.suites import train_suite


def test_agent_probes_all_fail():
    av = AgentVerifier()
    for t in train_suite("agent", 6):
        task = t.verifier_task()
        assert av.verify(task, t.solution).passed
        for p in agent_probes(task):
            v = av.verify(task, p.response)
            assert not v.passed, (p.name, p.response, v)
