"""Failure types through each domain's environment, judged by the real verifiers: what a report counts before/after."""

from __future__ import annotations

import json

from flywheel.environments.targets import scratchpad
from flywheel.environments.verdict import Verdict
from flywheel.evaluation.failures import count_failures, failure_type
from flywheel.evaluation.report import to_markdown, write_report
from flywheel.evaluation.runner import EvalReport, aggregate, score_rollouts
from flywheel.evaluation.suites import EvalConfig
from flywheel.rollout.types import Rollout
from flywheel.tasks.suites import heldout_suite
from flywheel.verifiers import score


def test_code_and_agent_failures_are_the_verifiers_reason_classes(local_sandbox):
    code = heldout_suite("code")[0]
    vt = code.verifier_task()
    entry = vt["entry_point"]
    cases = {
        code.solution: "",
        f"```python\ndef {entry}(x:\n    return\n```": "syntax_error",
        f"```python\ndef {entry}(*a):\n    return 'nope'\n```": "wrong_output",
        f"```python\ndef {entry}(*a):\n    raise KeyError('boom')\n```": "runtime_error",
    }
    for response, expected in cases.items():
        v = score("code", vt, response)
        assert failure_type("code", vt, response, v) == expected, v.reason

    agent = heldout_suite("agent")[0]
    vt = agent.verifier_task()
    finish = '<tool_call>{"name":"finish","arguments":{}}</tool_call>'
    cases = {
        agent.solution: "",
        "I will not use tools.": "no_tool_calls",
        '<tool_call>{"name":"teleport","arguments":{}}</tool_call>': "unknown_tool",
        "<tool_call>{not json</tool_call>": "malformed_call",
        finish + finish: "call_after_finish",
        finish: "goal_not_reached",
        agent.solution.replace(finish, ""): "not_finished",
    }
    for response, expected in cases.items():
        v = score("agent", vt, response)
        assert failure_type("agent", vt, response, v) == expected, v.reason


def test_a_domain_no_environment_serves_gets_its_verdicts_label():
    assert failure_type("nowhere.x", {}, "", Verdict(0.0, False, "Wrong Answer: 3 != 4")) == "wrong_answer"
    assert failure_type("nowhere.x", {}, "", Verdict(0.0, False, "x", {"failure_type": "Bad Move"})) == "bad_move"
    assert failure_type("nowhere.x", {}, "", Verdict(1.0, True, "ok")) == ""


def _rollout(task, text: str) -> Rollout:
    return Rollout(task.prompt, [1] * 4, [2] * 3, [0.0] * 3, [1] * 3, text, 0, task.task_id, task.domain)


def test_reports_count_failures_per_domain_in_markdown_and_json(tmp_path):
    """Sampled and greedy failures land in TaskResult, the report's counts, its markdown table and JSON."""
    cfg = EvalConfig(n_samples=3, tasks_per_domain={"math": 2}, n_boot=50)
    tasks = heldout_suite("math")[:2]

    def texts(t, wrong_answer: bool) -> list[str]:
        gold, answer = scratchpad(t.solution), t.reference["answer"]
        noisy = gold.replace(f"Answer: {answer}", f"Answer: {int(answer) + 1}")
        return [noisy if wrong_answer else gold, "no idea", gold]

    def report(name: str, wrong_answer: bool) -> EvalReport:
        groups = [[_rollout(t, x) for x in texts(t, wrong_answer)] for t in tasks]
        greedy = [[_rollout(t, "Answer: 0" if wrong_answer else scratchpad(t.solution))] for t in tasks]
        res = score_rollouts(tasks, groups, cfg, greedy=greedy)
        return EvalReport(name, cfg, res, aggregate(res, cfg))

    before, after = report("before", True), report("after", False)
    assert before.tasks[0].failures == ("answer_mismatch", "format", "")
    assert before.tasks[0].greedy is False and before.tasks[0].greedy_failure == "wrong_answer"
    assert after.tasks[0].greedy is True and after.tasks[0].greedy_failure == ""
    assert before.failure_counts() == {"math": {"answer_mismatch": 2, "format": 2}}
    assert after.failure_counts() == {"math": {"format": 2}}
    assert before.failure_counts(greedy=True) == {"math": {"wrong_answer": 2}}
    assert after.greedy_rates() == {"math": 1.0, "overall": 1.0} and before.greedy_rates()["math"] == 0.0
    md = to_markdown(after, before)
    assert "| math | answer_mismatch | 2 | 0 | 0 | 0 |" in md and "| math | format | 2 | 2 | 0 | 0 |" in md
    assert "| math | wrong_answer | 0 | 0 | 2 | 0 |" in md
    payload = json.loads(write_report(tmp_path, after, before)["json"].read_text())
    assert payload["failure_types"]["before"] == {"math": {"answer_mismatch": 2, "format": 2}}
    assert payload["failure_types"]["after_greedy"] == {"math": {}}
    assert payload["candidate"]["failure_types"] == {"math": {"format": 2}}
    assert count_failures(["", "a", "b", "a"]) == {"a": 2, "b": 1}
