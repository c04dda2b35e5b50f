"""Level 2 of the code SFT distribution: the level-1 shape (a named function, a one-line docstring, a
one-line body) with new operations and wider constants.

Every family here names its functions or sets its constants so that no header can be a level-1 one
(`add_k` here has k 31..99, level 1's 1..30; `clamp_lo_hi` here starts at 6, level 1's at 0..5), and no
production or test header (`shifted.py`) can be one of these.
"""

from __future__ import annotations

import random

from flywheel.environments.code.shape import Family, fn, xs_of


def _add_wide(rng: random.Random):
    k = rng.randint(31, 99)
    return fn(f"add_{k}", "x", f"Return x plus {k}.", f"x + {k}", [(x,) for x in (0, 3, -2, 10)])


def _times_wide(rng: random.Random):
    k = rng.randint(21, 40)
    return fn(f"times_{k}", "x", f"Return x times {k}.", f"x * {k}", [(x,) for x in (0, 1, 4, -3)])


def _subtract(rng: random.Random):
    k = rng.randint(1, 99)
    return fn(f"subtract_{k}", "x", f"Return x minus {k}.", f"x - {k}", [(x,) for x in (0, 3, -2, 100)])


def _floor_div(rng: random.Random):
    k = rng.randint(2, 30)
    return fn(f"divide_by_{k}", "x", f"Return x divided by {k}, rounded down.", f"x // {k}",
              [(x,) for x in (0, k - 1, 3 * k + 1, 100)])


def _mod(rng: random.Random):
    k = rng.randint(2, 30)
    return fn(f"mod_{k}", "x", f"Return the remainder of x divided by {k}.", f"x % {k}",
              [(x,) for x in (0, k, k + 1, 100)])


def _power(rng: random.Random):
    k = rng.randint(2, 6)
    return fn(f"power_{k}", "x", f"Return x to the power {k}.", f"x ** {k}", [(x,) for x in (0, 1, 2, -3)])


def _less_than(rng: random.Random):
    k = rng.randint(0, 40)
    xs = xs_of(rng, -5, 45)
    return fn(f"less_than_{k}", "xs", f"Return the items of xs less than {k}, in order.",
              f"[x for x in xs if x < {k}]", [(xs,), ([],)])


def _greater_than_wide(rng: random.Random):
    k = rng.randint(21, 40)
    xs = xs_of(rng, 10, 50)
    return fn(f"greater_than_{k}", "xs", f"Return the items of xs greater than {k}, in order.",
              f"[x for x in xs if x > {k}]", [(xs,), ([],)])


def _first_k(rng: random.Random):
    k = rng.randint(1, 9)
    return fn(f"first_{k}", "xs", f"Return the first {k} items of xs.", f"xs[:{k}]",
              [(list(range(12)),), ([5, 6],), ([],)])


def _last_k(rng: random.Random):
    k = rng.randint(1, 9)
    return fn(f"last_{k}", "xs", f"Return the last {k} items of xs.", f"xs[-{k}:]",
              [(list(range(12)),), ([5, 6, 7, 8, 9, 10, 11, 12, 13, 14],)])


def _between(rng: random.Random):
    lo = rng.randint(0, 20)
    hi = lo + rng.randint(1, 20)
    return fn(f"between_{lo}_{hi}", "x", f"Return True if x is between {lo} and {hi}, inclusive.",
              f"{lo} <= x <= {hi}", [(x,) for x in (lo - 1, lo, hi, hi + 1, (lo + hi) // 2)])


def _clamp_wide(rng: random.Random):
    lo = rng.randint(6, 20)
    hi = lo + rng.randint(11, 20)
    return fn(f"clamp_{lo}_{hi}", "x", f"Return x limited to the range {lo}..{hi}.", f"min(max(x, {lo}), {hi})",
              [(x,) for x in (lo - 3, lo, hi + 4, (lo + hi) // 2)])


def _is_multiple_wide(rng: random.Random):
    k = rng.randint(16, 40)
    return fn(f"is_multiple_of_{k}", "n", f"Return True if n is a multiple of {k}.", f"n % {k} == 0",
              [(n,) for n in (0, k, k + 1, 3 * k, 2 * k - 1)])


def _repeat_wide(rng: random.Random):
    k = rng.randint(10, 20)
    return fn(f"repeat_{k}", "s", f"Return s repeated {k} times.", f"s * {k}", [("a",), ("ab",), ("",)])


def _count_char_wide(rng: random.Random):
    c = rng.choice("fghijklmnopqrstuvwxyz")
    return fn(f"count_{c}", "s", f"Return how many times '{c}' occurs in s.", f"s.count('{c}')",
              [("",), (c * 3,), (f"x{c}y{c}",), ("123",)])


def _replace(rng: random.Random):
    a, b = rng.sample("abcdefghij", 2)
    return fn(f"replace_{a}_{b}", "s", f"Return s with every '{a}' replaced by '{b}'.", f"s.replace('{a}', '{b}')",
              [("",), (f"{a}x{a}",), ("zz",), (f"{b}{a}",)])


def _starts_with(rng: random.Random):
    c = rng.choice("abcdefghijklmnopqrstuvwxyz")
    return fn(f"starts_with_{c}", "s", f"Return True if s starts with '{c}'.", f"s.startswith('{c}')",
              [(f"{c}xy",), ("",), (f"x{c}",)])


def _ends_with(rng: random.Random):
    c = rng.choice("abcdefghijklmnopqrstuvwxyz")
    return fn(f"ends_with_{c}", "s", f"Return True if s ends with '{c}'.", f"s.endswith('{c}')",
              [(f"xy{c}",), ("",), (f"{c}x",)])


def _add_each(rng: random.Random):
    k = rng.randint(1, 30)
    return fn(f"add_{k}_to_each", "xs", f"Return xs with {k} added to each item.", f"[x + {k} for x in xs]",
              [([1, 2, 3],), ([],), ([-5],)])


def _scale_each(rng: random.Random):
    k = rng.randint(2, 20)
    return fn(f"multiply_each_by_{k}", "xs", f"Return xs with each item multiplied by {k}.", f"[x * {k} for x in xs]",
              [([1, 2, 3],), ([],), ([-5],)])


def _subtract_each(rng: random.Random):
    k = rng.randint(1, 30)
    return fn(f"subtract_{k}_from_each", "xs", f"Return xs with {k} subtracted from each item.",
              f"[x - {k} for x in xs]", [([1, 2, 3],), ([],), ([40],)])


def _distance(rng: random.Random):
    k = rng.randint(0, 50)
    return fn(f"distance_to_{k}", "x", f"Return the distance between x and {k}.", f"abs(x - {k})",
              [(x,) for x in (0, k, k + 3, -7)])


def _larger(rng: random.Random):
    k = rng.randint(-20, 50)
    return fn(f"at_least_{k}".replace("-", "minus_"), "x", f"Return the larger of x and {k}.", f"max(x, {k})",
              [(x,) for x in (k - 5, k, k + 5)])


def _smaller(rng: random.Random):
    k = rng.randint(-20, 50)
    return fn(f"at_most_{k}".replace("-", "minus_"), "x", f"Return the smaller of x and {k}.", f"min(x, {k})",
              [(x,) for x in (k - 5, k, k + 5)])


def _equals(rng: random.Random):
    k = rng.randint(0, 99)
    return fn(f"equals_{k}", "x", f"Return True if x equals {k}.", f"x == {k}", [(k,), (k + 1,), (0 if k else 1,)])


def _is_less(rng: random.Random):
    k = rng.randint(0, 99)
    return fn(f"is_less_than_{k}", "x", f"Return True if x is less than {k}.", f"x < {k}",
              [(k,), (k - 1,), (k + 10,)])


def _item_at(rng: random.Random):
    k = rng.randint(0, 5)
    return fn(f"item_{k}", "xs", f"Return the item of xs at index {k}.", f"xs[{k}]",
              [(list(range(10, 20)),), ([7, 6, 5, 4, 3, 2, 1],)])


def _append_text(rng: random.Random):
    w = "".join(rng.sample("abcdefghij", 2))
    return fn(f"append_{w}", "s", f"Return s with '{w}' added at the end.", f"s + '{w}'", [("",), ("xy",)])


def _prepend_text(rng: random.Random):
    w = "".join(rng.sample("abcdefghij", 2))
    return fn(f"prepend_{w}", "s", f"Return s with '{w}' added at the start.", f"'{w}' + s", [("",), ("xy",)])


def _list_op(rng: random.Random):
    name, doc, expr, cases = rng.choice([
        ("min_list", "Return the smallest number in xs.", "min(xs)", [([1, 2, 3],), ([-4, -2],), ([7],)]),
        ("sum_of_squares", "Return the sum of the squares of the numbers in xs.", "sum(x * x for x in xs)",
         [([],), ([2, 3, 4],), ([-1, 5],)]),
        ("length", "Return the number of items in xs.", "len(xs)", [([],), ([4, 4, 4],), ([1],)]),
        ("upper_string", "Return s in upper case.", "s.upper()", [("abc",), ("",), ("aB1",)]),
    ])
    return fn(name, "s" if name == "upper_string" else "xs", doc, expr, cases)


SFT2: tuple[Family, ...] = (
    _add_wide, _times_wide, _subtract, _floor_div, _mod, _power, _less_than, _greater_than_wide, _first_k, _last_k,
    _between, _clamp_wide, _is_multiple_wide, _repeat_wide, _count_char_wide, _replace, _starts_with, _ends_with,
    _add_each, _list_op, _scale_each, _subtract_each, _distance, _larger, _smaller, _equals, _is_less, _item_at,
    _append_text, _prepend_text,
)
"""Level 2's families (in-distribution: SFT data and the held-out regression suite)."""
