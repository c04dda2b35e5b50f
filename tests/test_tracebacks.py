"""One rule for what an error text says, shared by the simulated users' near misses and the mining taxonomy."""

from __future__ import annotations

from flywheel.mining.taxonomy import classify
from flywheel.tracebacks import exception_type, failed_an_assert


def test_the_exception_type_is_read_from_the_last_line():
    tb = 'Traceback (most recent call last):\n  File "main.py", line 3, in <module>\nValueError: bad\n\n'
    assert exception_type(tb) == "ValueError"
    assert exception_type("pkg.mod.CustomError") == "pkg.mod.CustomError"
    assert exception_type("the answer was 4") is None and exception_type(None) is None


def test_a_failed_assert_is_a_wrong_answer_to_the_environment_and_to_the_taxonomy():
    wrong = 'Traceback (most recent call last):\n  File "main.py", line 9\nAssertionError: f(2) != 5'
    crash = 'Traceback (most recent call last):\n  File "main.py", line 9\nTypeError: unsupported operand'
    assert failed_an_assert(wrong) and not failed_an_assert(crash) and not failed_an_assert(None)
    code = "```python\ndef f(x):\n    return x\n```"
    response = [{"role": "assistant", "content": code}]
    assert classify("code", {"passed": False, "status": "failed", "error": wrong}, response)[0] == "wrong_answer"
    assert classify("code", {"passed": False, "status": "failed", "error": crash}, response)[0] == "runtime_error"
