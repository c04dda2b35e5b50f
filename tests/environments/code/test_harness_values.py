"""Honest solutions whose values used to fail at the judge/candidate boundary now pass, in the real sandbox.

The issue's false negatives (in-place mutation the test expects, ints over 4,300 digits, function
arguments, generators, `Fraction` returns) each come in several variants, and each variant has a
wrong twin that must still fail: crossing values faithfully must not turn into passing anything.
"""

from __future__ import annotations

import pytest

from flywheel.environments.code.verifier import CodeVerifier


def task(entry: str, test: str, prompt: str = "") -> dict:
    return {"prompt": prompt, "entry_point": entry, "test": "def check(candidate):\n" + test}


CASES = {  # name -> (task, right solution, wrong solution)
    "sort_in_place": (
        task("sort_it", "    a = [3, 1, 2]\n    assert candidate(a) is None\n    assert a == [1, 2, 3]\n"),
        "def sort_it(a):\n    a.sort()\n",
        "def sort_it(a):\n    a = sorted(a)\n",
    ),
    "mutate_kwarg_dict": (
        task("bump", "    d = {'x': 1}\n    candidate(d=d, k='x')\n    assert d == {'x': 2}\n"),
        "def bump(d, k):\n    d[k] += 1\n",
        "def bump(d, k):\n    d = dict(d)\n    d[k] += 1\n",
    ),
    "nested_identity_kept": (
        task("fill", "    inner = []\n    outer = [inner, {'k': []}]\n    candidate(outer)\n"
                     "    assert inner == [1] and outer[1]['k'] == [2] and outer[0] is inner\n"),
        "def fill(o):\n    o[0].append(1)\n    o[1]['k'].append(2)\n",
        "def fill(o):\n    o[0].append(1)\n    o[1]['k'] = [2, 2]\n",
    ),
    "set_and_bytearray": (
        task("grow", "    s, b = {1}, bytearray(b'ab')\n    candidate(s, b)\n    assert s == {1, 2} and b == bytearray(b'abc')\n"),
        "def grow(s, b):\n    s.add(2)\n    b.append(99)\n",
        "def grow(s, b):\n    s.add(3)\n    b.append(99)\n",
    ),
    "mutation_seen_by_a_later_call": (
        task("push", "    st = []\n    candidate(st, 1)\n    candidate(st, 2)\n    assert st == [1, 2]\n"),
        "def push(st, x):\n    st.append(x)\n",
        "def push(st, x):\n    st[:] = [x]\n",
    ),
    "int_over_4300_digits_in_and_out": (
        task("succ", "    n = 7 ** 9000\n    assert candidate(n) == n + 1\n    assert len(str(candidate(10 ** 6000))) == 6001\n"),
        "def succ(n):\n    return n + 1\n",
        "def succ(n):\n    return n + 2\n",
    ),
    "key_function_argument": (
        task("sort_by", "    assert candidate(['bb', 'a', 'ccc'], key=len) == ['a', 'bb', 'ccc']\n"
                        "    assert candidate([3, 1, 2], key=lambda x: -x) == [3, 2, 1]\n"),
        "def sort_by(xs, key):\n    return sorted(xs, key=key)\n",
        "def sort_by(xs, key):\n    return sorted(xs)\n",
    ),
    "predicate_that_raises": (
        task("safe_count", "    def p(x):\n        if x == 0:\n            raise ZeroDivisionError('zero')\n        return x > 1\n"
                           "    assert candidate([0, 1, 2, 3], p) == 2\n"),
        "def safe_count(xs, p):\n    n = 0\n    for x in xs:\n        try:\n            n += p(x)\n"
        "        except ZeroDivisionError:\n            pass\n    return n\n",
        "def safe_count(xs, p):\n    return sum(1 for x in xs[1:] if p(x)) + 1\n",
    ),
    "returns_a_closure": (
        task("adder", "    f = candidate(3)\n    assert f(2) == 5 and f(-3) == 0\n"),
        "def adder(n):\n    return lambda x: x + n\n",
        "def adder(n):\n    return lambda x: x + n + 1\n",
    ),
    "compose_functions": (
        task("compose", "    h = candidate(lambda x: x + 1, lambda x: x * 2)\n    assert h(5) == 11\n"),
        "def compose(f, g):\n    return lambda x: f(g(x))\n",
        "def compose(f, g):\n    return lambda x: g(f(x))\n",
    ),
    "infinite_generator": (
        task("naturals", "    g = candidate()\n    assert [next(g) for _ in range(5)] == [0, 1, 2, 3, 4]\n"
                         "    import itertools\n    assert list(itertools.islice(candidate(), 2500, 2502)) == [2500, 2501]\n"),
        "def naturals():\n    n = 0\n    while True:\n        yield n\n        n += 1\n",
        "def naturals():\n    n = 1\n    while True:\n        yield n\n        n += 1\n",
    ),
    "long_finite_generator": (
        task("evens", "    assert list(candidate(5000)) == list(range(0, 10000, 2))\n"),
        "def evens(n):\n    return (2 * i for i in range(n))\n",
        "def evens(n):\n    return (2 * i for i in range(n - 1))\n",
    ),
    "generator_argument": (
        task("total", "    assert candidate(x * x for x in range(4)) == 14\n    assert candidate(iter([])) == 0\n"),
        "def total(it):\n    return sum(it)\n",
        "def total(it):\n    return sum(it) + 1\n",
    ),
    "fraction_and_decimal": (
        task("third", "    from fractions import Fraction\n    from decimal import Decimal\n"
                      "    assert candidate(Fraction(1)) == Fraction(1, 3) and type(candidate(Fraction(2))) is Fraction\n"
                      "    assert candidate(Decimal('0.3')) == Decimal('0.1')\n"),
        "def third(x):\n    return x / 3\n",
        "def third(x):\n    return float(x) / 3\n",
    ),
    "range_deque_and_views": (
        task("shapes", "    from collections import deque\n    r, d, k = candidate(3)\n"
                       "    assert list(r) == [0, 1, 2] and d == deque([0, 1, 2]) and k == {0, 1, 2}\n"),
        "from collections import deque\ndef shapes(n):\n    return range(n), deque(range(n)), dict.fromkeys(range(n)).keys()\n",
        "def shapes(n):\n    return range(n), list(range(n)), dict.fromkeys(range(n)).keys()\n",
    ),
    "printed_output_captured_by_the_test": (
        task("show", "    import contextlib, io\n    buf = io.StringIO()\n    with contextlib.redirect_stdout(buf):\n"
                     "        candidate(3)\n        candidate(4)\n    assert buf.getvalue() == '3\\n4\\n', buf.getvalue()\n"),
        "def show(n):\n    print(n)\n",
        "def show(n):\n    print(n + 1)\n",
    ),
    "numpy_values": (  # a stand-in for numpy (not installed in every sandbox): same module name and methods
        task("total", "    assert candidate([1, 2]) == 3 and candidate([]) == [0, 0]\n"),
        "class _N:\n    __module__ = 'numpy'\n    dtype = 'int64'\n    def __init__(self, v):\n        self.v = v\n"
        "    def tolist(self):\n        return self.v\n"
        "def total(xs):\n    return _N(sum(xs)) if xs else _N([0, 0])\n",
        "class _N:\n    __module__ = 'numpy'\n    dtype = 'int64'\n    def tolist(self):\n        return self\n"
        "    def __eq__(self, o):\n        return True\n"
        "def total(xs):\n    return _N()\n",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_honest_values_pass_and_wrong_twins_fail(cv, name):
    t, right, wrong = CASES[name]
    v = cv.verify(t, right)
    assert v.passed, (name, v)
    w = cv.verify(t, wrong)
    assert not w.passed and w.reward == 0.0, (name, w)


ATTACKS = {  # crossing more things must not open a way around the judge
    "mutate_arg_into_always_equal": (
        task("f", "    a = [0]\n    candidate(a)\n    assert a == [42]\n"),
        "class E(list):\n    def __eq__(self, o):\n        return True\ndef f(a):\n    a.append(E())\n",
    ),
    "callback_nan_into_tolerance_check": (
        task("f", "    def close(x):\n        return not abs(x - 0.5) > 1e-9\n    assert candidate(close)\n"),
        "def f(close):\n    return close(float('nan'))\n",
    ),
    "returned_function_returns_always_equal": (
        task("f", "    assert candidate()(1) == 2\n"),
        "class E:\n    def __eq__(self, o):\n        return True\ndef f():\n    return lambda x: E()\n",
    ),
    "generator_yields_nan": (
        task("f", "    for got, ref in zip(candidate(), [0.5, 1.5]):\n        if abs(got - ref) > 1e-9:\n"
                  "            raise AssertionError(got)\n"),
        "def f():\n    yield float('nan')\n    yield float('nan')\n",
    ),
    "generator_stop_iteration_ends_test_loop": (
        task("f", "    assert all(x == 1 for x in candidate())\n    assert len(list(candidate())) == 3\n"),
        "def f():\n    yield 1\n    raise RuntimeError('x')\n",
    ),
    "callback_called_forever": (
        task("f", "    assert candidate(lambda: 1) == 2\n"),
        "def f(g):\n    while True:\n        g()\n",
    ),
    "forged_mutation_of_other_objects": (
        task("f", "    ref = [1, 2]\n    a = [0]\n    candidate(a)\n    assert ref == [9] and a == [0]\n"),
        "def f(a):\n    a.clear()\n    a.append(0)\n    return None\n",
    ),
}


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_crossing_values_opens_no_hack(cv, name):
    t, bad = ATTACKS[name]
    v = cv.verify(t, bad)
    assert not v.passed and v.reward == 0.0, (name, v)


@pytest.mark.parametrize("shape", ["parts", "message_with_parts", "messages"])
def test_code_in_content_parts_is_judged(cv, shape):
    t, right, wrong = CASES["sort_in_place"]

    def wrap(code):
        parts = [{"type": "text", "text": "Here:\n```python\n"}, {"type": "text", "text": code + "```\n"}]
        if shape == "parts":
            return parts
        if shape == "message_with_parts":
            return {"role": "assistant", "content": parts}
        return [{"role": "user", "content": [{"type": "text", "text": "sort"}]}, {"role": "assistant", "content": parts}]
    assert cv.verify(t, wrap(right)).passed
    assert not cv.verify(t, wrap(wrong)).passed


def test_a_test_that_passes_an_unpassable_value_is_still_judged(sandbox_pool):
    cv = CodeVerifier(sandbox=sandbox_pool, timeout_s=2.0)
    t = task("f", "    class Box:\n        pass\n    assert candidate(Box()) == 1\n")
    v = cv.verify(t, "def f(b):\n    return 1\n")
    assert not v.passed and "cannot cross" in v.reason, v
