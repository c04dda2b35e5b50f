"""Code verifier: the model's code against the task's tests in the real sandbox, judged by the harness."""

from __future__ import annotations

import hashlib
import json

import pytest

from flywheel.environments.code.verifier import HARNESS_SOURCE, CodeVerifier, assemble, extract_code
from flywheel.sandbox.base import ExecResult, SandboxInfraError
from flywheel.tasks.suites import train_suite
from flywheel.verifiers.batch import score_batch
from flywheel.verifiers.common import TaskError
from flywheel.verifiers.registry import VerifierRegistry
from flywheel.verifiers.verdict import VerifierInfraError

TASK = {
    "prompt": "def add_k(x):\n    \"\"\"Return x plus 3.\"\"\"\n",
    "entry_point": "add_k",
    "test": "def check(candidate):\n    assert candidate(1) == 4\n    assert candidate(-3) == 0\n",
}


def test_suite_gold_passes_and_wrong_fails(cv):
    for t in train_suite("code", 8):
        task = t.verifier_task()
        v = cv.verify(task, t.solution)
        assert v.passed and v.reward == 1.0, v
        wrong = cv.verify(task, f"```python\n{t.prompt}    return None\n```")
        assert not wrong.passed and wrong.reason.startswith("assertion failed at test line"), wrong.reason


def test_response_shapes(cv):
    body = "    return x + 3\n"
    assert cv.verify(TASK, "def add_k(x):\n" + body).passed  # whole response is code
    assert cv.verify(TASK, body).passed  # HumanEval-style completion of the prompt
    two = "First try:\n```python\ndef add_k(x):\n    return x\n```\nFixed:\n```python\ndef add_k(x):\n" + body + "```"
    assert cv.verify(TASK, two).passed  # the last block defining the entry point wins
    shell = "```bash\nrm -rf /\n```\n```python\ndef add_k(x):\n" + body + "```"
    assert cv.verify(TASK, shell).passed
    v = cv.verify(TASK, "```python\ndef add_k(x) return x\n```")
    assert not v.passed and v.reason.startswith("syntax error")


def test_code_extraction_helpers():
    assert extract_code("no fence here", "f") == "no fence here"
    assert extract_code("```py\nx = 1\n```", "f") == "x = 1\n"
    assert extract_code("```python\ndef f(): pass\n", "f") == "def f(): pass\n"  # unterminated fence
    prog, how = assemble("    return 1\n", "from typing import List\ndef f():\n", "f")
    assert how == "completion" and prog.startswith("from typing import List")
    prog, how = assemble("def f():\n    return List\n", "from typing import List\ndef f():\n", "f")
    assert how == "function" and prog.startswith("from typing import List\n")


def test_crashes_in_model_code_are_failed_verdicts(cv):
    v = cv.verify(TASK, "def add_k(x):\n    raise ValueError('boom')\n")
    assert not v.passed and "ValueError: boom" in v.reason
    v = cv.verify(TASK, "import numpy\ndef add_k(x):\n    return x + 3\n")
    assert not v.passed and "does not load" in v.reason
    v = cv.verify(dict(TASK, prompt=""), "def other(x):\n    return x\n")
    assert not v.passed and "no function 'add_k'" in v.reason
    v = cv.verify(TASK, "def add_k(x):\n    return add_k(x)\n")
    assert not v.passed and "RecursionError" in v.reason
    v = cv.verify(TASK, "def add_k(x):\n    return bytearray(10**10)\n")
    assert not v.passed and "MemoryError" in v.reason


def test_infinite_loop_times_out(cv):
    v = cv.verify(TASK, "def add_k(x):\n    while True:\n        pass\n")
    assert not v.passed and v.reason.startswith("timeout") and v.details["cacheable"] is False
    assert v.details["duration_s"] < 8


def test_prompt_helpers_and_values_cross_as_plain_types(cv):
    task = {
        "prompt": "def poly(xs, x):\n    return sum(c * x ** i for i, c in enumerate(xs))\n\n"
                  "def root(xs: list):\n    \"\"\"A root of poly(xs).\"\"\"\n",
        "entry_point": "root",
        "test": "def check(candidate):\n    r = candidate([-4.0, 0.0, 1.0])\n    assert abs(poly([-4.0, 0.0, 1.0], r)) < 1e-6\n"
                "    assert candidate.__name__ == 'root'\n",
    }
    assert cv.verify(task, "def root(xs):\n    return 2.0\n").passed
    kinds = {
        "prompt": "def kinds():\n    pass\n", "entry_point": "kinds",
        "test": "def check(candidate):\n    r = candidate()\n"
                "    assert r == {'t': (1, 2.5), 's': {1, 2}, 'b': b'x', 'c': 1j, 'n': None, 'l': [True]}\n"
                "    assert type(r['t']) is tuple and type(r['s']) is set\n",
    }
    good = "def kinds():\n    return {'t': (1, 2.5), 's': {1, 2}, 'b': b'x', 'c': 1j, 'n': None, 'l': [True]}\n"
    assert cv.verify(kinds, good).passed
    assert not cv.verify(kinds, good.replace("(1, 2.5)", "[1, 2.5]")).passed


def test_expected_exceptions_cross_as_builtin_types(cv):
    task = {"prompt": "", "entry_point": "f", "test": (
        "def check(candidate):\n    try:\n        candidate(-1)\n    except ValueError:\n        pass\n"
        "    else:\n        assert False, 'no ValueError'\n    assert candidate(2) == 2\n")}
    assert cv.verify(task, "def f(x):\n    if x < 0:\n        raise ValueError('neg')\n    return x\n").passed
    assert not cv.verify(task, "def f(x):\n    return x\n").passed


def test_result_channel_checks_on_real_results():
    """The verdict needs exactly one nonce line, the pristine test hash and an unchanged harness."""
    cv = CodeVerifier(sandbox=None)
    nonce, test = "ab" * 16, TASK["test"]
    good = {"status": "passed", "reason": "all tests passed", "calls": 2, "tamper": [],
            "test_sha256": hashlib.sha256(test.encode()).hexdigest()}

    def res(lines, files=None, exit_code=0):
        return ExecResult(exit_code, "".join(f"{nonce} {json.dumps(x)}\n" for x in lines), "",
                          files=files or {"main.py": HARNESS_SOURCE.encode()})

    assert cv._read_result(res([good]), nonce, test, "function").passed
    assert "more than one" in cv._read_result(res([good, good]), nonce, test, "function").reason
    altered = dict(good, test_sha256="0" * 64)
    assert "hash mismatch" in cv._read_result(res([altered]), nonce, test, "function").reason
    assert "main.py changed" in cv._read_result(res([good], {"main.py": b"x"}), nonce, test, "function").reason
    assert not cv._read_result(res([good], exit_code=1), nonce, test, "function").passed
    other = ExecResult(0, f"{'cd' * 16} {json.dumps(good)}\n", "")  # a line with another nonce
    with pytest.raises(VerifierInfraError):
        cv._read_result(other, nonce, test, "function")
    with pytest.raises(TaskError):
        cv._read_result(res([{"status": "task_error", "reason": "bad test"}]), nonce, test, "function")


def test_task_errors(cv):
    with pytest.raises(TaskError):
        cv.verify({"prompt": "", "entry_point": "f"}, "def f(): pass")
    with pytest.raises(TaskError):
        cv.verify({"prompt": "", "entry_point": "f", "test": "def check(candidate):\n    assert (\n"}, "def f(): pass")


class FlakySandbox:
    """The real pool, but the first `n` runs fail like a crashed fork server would."""

    def __init__(self, real, n):
        self.real, self.n, self.calls = real, n, 0

    def run(self, *a, **kw):
        self.calls += 1
        if self.calls <= self.n:
            raise SandboxInfraError("fork server died")
        return self.real.run(*a, **kw)


def test_infra_errors_are_retried_then_raised(sandbox_pool):
    flaky = FlakySandbox(sandbox_pool, 2)
    reg = VerifierRegistry(sandbox=flaky, code_timeout_s=2.0)
    items = [("code", TASK, "def add_k(x):\n    return x + 3\n")]
    assert score_batch(items, registry=reg, retries=2, backoff_s=0.01)[0].passed
    dead = VerifierRegistry(sandbox=FlakySandbox(sandbox_pool, 10**6))
    with pytest.raises(VerifierInfraError):
        score_batch(items, registry=dead, retries=1, backoff_s=0.01)
    assert score_batch(items, registry=dead, retries=1, backoff_s=0.01, errors="none") == [None]
