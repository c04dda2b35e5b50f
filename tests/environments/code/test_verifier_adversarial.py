"""Red-team attacks on the code judge, in the real sandbox: each must end as a 0, never as None.

A wrong solution that makes the judge fail (signals it, overflows its work-dir walk) or bends the
test's semantics (StopIteration ending a `map`, NaN slipping through `abs(x - ref) > tol`) must get
a failed verdict with reward 0. Positive controls: honest solutions of the same shapes still pass.
"""

from __future__ import annotations

import time

import pytest

TASK = {
    "prompt": "def add_k(x):\n    \"\"\"Return x plus 3.\"\"\"\n",
    "entry_point": "add_k",
    "test": "def check(candidate):\n    assert candidate(1) == 4\n    assert candidate(-3) == 0\n",
}
RIGHT = "def add_k(x):\n    return x + 3\n"


def _zero(v) -> None:
    assert not v.passed and v.reward == 0.0, v


SIGNAL_ATTACKS = {
    "sigterm_parent_in_call": "import os, signal\ndef add_k(x):\n    os.kill(os.getppid(), signal.SIGTERM)\n    return None\n",
    "sigkill_parent_in_call": "import os, signal\ndef add_k(x):\n    os.kill(os.getppid(), signal.SIGKILL)\n    return None\n",
    "sigbus_parent_at_load": "import os, signal\nos.kill(os.getppid(), signal.SIGBUS)\ndef add_k(x):\n    return None\n",
    "sigusr1_parent_group": (
        "import os, signal\ndef add_k(x):\n    os.killpg(os.getpgid(os.getppid()), signal.SIGUSR1)\n    return None\n"
    ),
    "kill_everything": "import os, signal\ndef add_k(x):\n    os.kill(-1, signal.SIGKILL)\n    return None\n",
    "sigterm_then_wrong": (
        "import os, signal\ndef add_k(x):\n    os.kill(os.getppid(), signal.SIGTERM)\n    os.kill(os.getppid(), signal.SIGINT)\n"
        "    return x\n"
    ),
}


@pytest.mark.parametrize("name", sorted(SIGNAL_ATTACKS))
def test_signalling_the_judge_is_the_candidates_failure(cv, name):
    _zero(cv.verify(TASK, SIGNAL_ATTACKS[name]))


def test_harmless_signal_does_not_stop_an_honest_judge(cv):
    # a right answer that pokes the judge with a catchable signal is still judged on its answers
    v = cv.verify(TASK, "import os, signal\ndef add_k(x):\n    os.kill(os.getppid(), signal.SIGUSR2)\n    return x + 3\n")
    assert v.passed, v
    assert cv.verify(TASK, RIGHT).passed


DEEP = "import os\n{where}for _ in range({n}):\n    os.mkdir('d')\n    os.chdir('d')\n"
WALK_ATTACKS = {
    "deep_dirs_at_load": DEEP.format(where="", n=1100) + "def add_k(x):\n    return None\n",
    "deep_dirs_in_call": "import os\ndef add_k(x):\n    if not os.path.exists('d'):\n"
    + "".join("        " + ln + "\n" for ln in DEEP.format(where="", n=1100).splitlines()[1:]).replace("for", "for", 1)
    + "    return None\n",
    "deep_dirs_right_answer": DEEP.format(where="", n=1100) + RIGHT,
    "symlink_loop_right_answer": "import os\nos.symlink('.', 'loop')\nos.symlink('loop2', 'loop2')\n" + RIGHT,
}


@pytest.mark.parametrize("name", sorted(WALK_ATTACKS))
def test_overflowing_the_judges_walk_is_the_candidates_failure(cv, name):
    v = cv.verify(TASK, WALK_ATTACKS[name])
    _zero(v)
    assert "tampered" in v.reason, v.reason


MAP_TASK = dict(TASK, test=(
    "def check(candidate):\n"
    "    assert all(map(lambda x: candidate(x) == x + 3, [1, 2, 3]))\n"
    "    for got, want in zip(map(candidate, [4, 5]), [7, 8]):\n"
    "        assert got == want\n"
))
STOP_ATTACKS = {
    "stop_iteration": "def add_k(x):\n    raise StopIteration\n",
    "stop_iteration_with_value": "def add_k(x):\n    raise StopIteration(x + 3)\n",
    "next_of_empty": "def add_k(x):\n    return next(iter([]))\n",
    "stop_async_iteration": "def add_k(x):\n    raise StopAsyncIteration\n",
    "stop_iteration_subclass": "class S(StopIteration):\n    pass\ndef add_k(x):\n    raise S\n",
}


@pytest.mark.parametrize("name", sorted(STOP_ATTACKS))
def test_stop_iteration_from_the_candidate_fails_the_test(cv, name):
    v = cv.verify(MAP_TASK, STOP_ATTACKS[name])
    _zero(v)


def test_map_tests_still_pass_honest_code_and_expected_exceptions_still_cross(cv):
    assert cv.verify(MAP_TASK, RIGHT).passed
    task = dict(TASK, test="def check(candidate):\n    try:\n        candidate(-1)\n        assert False\n"
                "    except ValueError:\n        pass\n    assert candidate(1) == 4\n")
    assert cv.verify(task, "def add_k(x):\n    if x < 0:\n        raise ValueError(x)\n    return x + 3\n").passed


TOL_TASK = {
    "prompt": "def half(x):\n    \"\"\"x / 2.\"\"\"\n",
    "entry_point": "half",
    "test": (
        "def check(candidate):\n"
        "    for x, ref in [(1.0, 0.5), (3.0, 1.5)]:\n"
        "        got = candidate(x)\n"
        "        if isinstance(got, (list, tuple)):\n"
        "            got = got[0]\n"
        "        if abs(got - ref) > 1e-6:\n"
        "            raise AssertionError((x, got))\n"
    ),
}
NAN_ATTACKS = {
    "float_nan": "def half(x):\n    return float('nan')\n",
    "inf_minus_inf": "def half(x):\n    return float('inf') - float('inf')\n",
    "nan_in_list": "def half(x):\n    return [float('nan')]\n",
    "nan_in_tuple": "import math\ndef half(x):\n    return (math.nan, 1)\n",
    "complex_nan": "def half(x):\n    return complex(float('nan'), 0)\n",
    "decimal_nan": "from decimal import Decimal\ndef half(x):\n    return Decimal('NaN')\n",
}


@pytest.mark.parametrize("name", sorted(NAN_ATTACKS))
def test_nan_never_equals_a_reference(cv, name):
    _zero(cv.verify(TOL_TASK, NAN_ATTACKS[name]))


def test_a_word_containing_nan_does_not_let_nan_through(cv):
    task = dict(TOL_TASK, test=TOL_TASK["test"] + "    assert 'banana' and 'financial'\n")
    assert cv.verify(task, "def half(x):\n    return x / 2\n").passed
    _zero(cv.verify(task, NAN_ATTACKS["float_nan"]))


def test_floats_still_judged_and_nan_allowed_where_the_test_expects_it(cv):
    assert cv.verify(TOL_TASK, "def half(x):\n    return x / 2\n").passed
    assert not cv.verify(TOL_TASK, "def half(x):\n    return float('inf')\n").passed
    task = {"prompt": "", "entry_point": "f", "test": (
        "import math\ndef check(candidate):\n    assert math.isnan(candidate(0))\n    assert candidate(1) == 1.0\n"
        "    assert candidate(2) == float('inf')\n")}
    assert cv.verify(task, "def f(x):\n    return [float('nan'), 1.0, float('inf')][x]\n").passed


def test_values_that_used_to_break_crossing_now_cross(cv):
    big = {"prompt": "", "entry_point": "p", "test": "def check(candidate):\n    assert candidate(5000) == 10 ** 5000\n"}
    assert cv.verify(big, "def p(n):\n    return 10 ** n\n").passed
    assert not cv.verify(big, "def p(n):\n    return 10 ** n + 1\n").passed
    gen = {"prompt": "", "entry_point": "g", "test": "def check(candidate):\n    assert list(candidate(3)) == [0, 1, 2]\n"}
    assert cv.verify(gen, "def g(n):\n    yield from range(n)\n").passed
    assert cv.verify(gen, "def g(n):\n    return iter(range(n))\n").passed
    assert not cv.verify(gen, "def g(n):\n    yield from range(n + 1)\n").passed
    frac = {"prompt": "from fractions import Fraction\n", "entry_point": "third", "test": (
        "from fractions import Fraction\ndef check(candidate):\n    assert candidate(Fraction(1)) == Fraction(1, 3)\n"
        "    assert type(candidate(Fraction(2))) is Fraction\n")}
    assert cv.verify(frac, "from fractions import Fraction\ndef third(x):\n    return x / 3\n").passed
    assert not cv.verify(frac, "def third(x):\n    return float(x) / 3\n").passed


CATCHABLE = {  # a right answer that pokes the judge with catchable signals is still judged on its answers
    "sigterm_judge_at_load": "import os, signal\nos.kill(os.getppid(), signal.SIGTERM)\n" + RIGHT,
    "sigint_all_at_load": "import os, signal\ntry:\n    os.kill(-1, signal.SIGINT)\nexcept OSError:\n    pass\n" + RIGHT,
    "sighup_and_sigalrm_in_call": "import os, signal\ndef add_k(x):\n    os.kill(os.getppid(), signal.SIGHUP)\n"
                                  "    os.kill(os.getppid(), signal.SIGALRM)\n    return x + 3\n",
}


@pytest.mark.parametrize("name", sorted(CATCHABLE))
def test_catchable_signals_change_nothing(cv, name):
    assert cv.verify(TASK, CATCHABLE[name]).passed
    _zero(cv.verify(TASK, CATCHABLE[name].replace("x + 3", "x + 4")))


def test_stopping_the_judge_is_a_zero_never_none(cv):
    """SIGSTOP cannot be caught: the sandbox's wall clock ends the run, and it is the candidate's failure."""
    v = cv.verify(TASK, "import os, signal\ndef add_k(x):\n    os.kill(os.getppid(), signal.SIGSTOP)\n    return x + 3\n")
    _zero(v)
    assert v.details.get("cacheable") is False


JUDGE_DISRUPTIONS = {  # what a same-uid process can still do to the judge ends as the candidate's 0
    "sigkill_judge_right_answer": "import os, signal\ndef add_k(x):\n    os.kill(os.getppid(), signal.SIGKILL)\n"
                                  "    return x + 3\n",
    "prlimit_cpu": "import os, resource\ndef add_k(x):\n    resource.prlimit(os.getppid(), resource.RLIMIT_CPU, (0, 0))\n"
                   "    while True:\n        pass\n",
    "prlimit_nofile": "import os, resource\ndef add_k(x):\n    resource.prlimit(os.getppid(), resource.RLIMIT_NOFILE, (0, 0))\n"
                      "    return x + 3\n",
    "prlimit_memory": "import os, resource\ndef add_k(x):\n    resource.prlimit(os.getppid(), resource.RLIMIT_AS, (1 << 20, 1 << 20))\n"
                      "    return [0] * 100000\n",
    "fifo_in_work_dir": "import os\nos.mkfifo('pipe.py')\ndef add_k(x):\n    return x + 3\n",
    "escaped_grandchild_edits_now": (
        "import os, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
        "        while True:\n            open('conftest.py', 'w').write('x')\n            time.sleep(0.001)\n"
        "    os._exit(0)\ntime.sleep(0.05)\n" + RIGHT),
    "garbage_frames": "import os, sys\ndef add_k(x):\n    os.write(int(sys.argv[2]), b'\\xff' * 64)\n    return x + 3\n",
    "forged_reply_frame_then_the_real_one": (
        "import json, os, struct, sys\nn = 0\ndef add_k(x):\n    global n\n    n += 1\n"
        "    d = json.dumps({'op': 'ret', 'id': n, 'ok': x + 3}).encode()\n"
        "    os.write(int(sys.argv[2]), struct.pack('>I', len(d)) + d)\n    return x + 3\n"),
    "oversized_frame": "import os, struct, sys\ndef add_k(x):\n    os.write(int(sys.argv[2]), struct.pack('>I', 1 << 30))\n"
                       "    return x + 3\n",
}


@pytest.mark.parametrize("name", sorted(JUDGE_DISRUPTIONS))
def test_disrupting_the_judge_is_a_zero_never_none(cv, name):
    t0 = time.monotonic()
    v = cv.verify(TASK, JUDGE_DISRUPTIONS[name])
    _zero(v)
    assert time.monotonic() - t0 < 8, v  # and it never hangs the judge


HARMLESS = {  # right answers doing odd things the judge must neither hang on nor count against them
    "fifo_swapped_for_the_log": (
        "import glob, os\nfor p in glob.glob('/tmp/candidate-*.log'):\n    os.unlink(p)\n    os.mkfifo(p)\n" + RIGHT),
    "escaped_grandchild_after_the_verdict": (
        "import os, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n        time.sleep(3)\n"
        "        open('conftest.py', 'w').write('x')\n    os._exit(0)\n" + RIGHT),
}


@pytest.mark.parametrize("name", sorted(HARMLESS))
def test_odd_but_right_answers_still_pass_quickly(cv, name):
    t0 = time.monotonic()
    assert cv.verify(TASK, HARMLESS[name]).passed
    assert time.monotonic() - t0 < 3
