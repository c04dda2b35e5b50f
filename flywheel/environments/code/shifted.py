"""Code beyond the SFT data: what production users ask (levels 3-5, appearing on later world days) and the
frozen test suite (level 6).

Each is a near variation of an SFT family (a level-1 one three times in four, as users ask the common
operations most), so a model taught those solves it sometimes: the same function with another
parameter name (3), with a type-hinted signature (4), documented in other words or asking two known
operations at once (5). The test suite words docstrings its own way, alone or with another parameter name,
or renames and annotates the parameter at once (6).

Disjoint by construction. In the SFT data each function name has one parameter name (x, n, s or xs), never
annotated, and a docstring that starts "Return " and ends with a period; level 3 gives the parameter
another name (and changes nothing else), level 4 annotates it (and nothing else), level 5 starts the
docstring "return " or "Returns ", or names a function `*_then_*`; level 6 starts the docstring "Give back "
(keeping the parameter or renaming it), or renames and annotates the parameter.
"""

from __future__ import annotations

import random
import re

from flywheel.environments.code.sft_families import SFT2
from flywheel.environments.code.shape import Family, Spec, fn, xs_of

_XS = (0, 3, -2, 10)


def _level1(rng: random.Random) -> Spec:
    """A level-1 family member as a `Spec` (the same names, wording and constants as `tasks.FAMILIES`)."""
    kind = rng.randrange(10)
    if kind == 0:
        k = rng.randint(1, 30)
        return fn(f"add_{k}", "x", f"Return x plus {k}.", f"x + {k}", [(x,) for x in _XS])
    if kind == 1:
        k = rng.randint(2, 20)
        return fn(f"times_{k}", "x", f"Return x times {k}.", f"x * {k}", [(x,) for x in (0, 1, 4, -3)])
    if kind == 2:
        k = rng.randint(2, 15)
        return fn(f"is_multiple_of_{k}", "n", f"Return True if n is a multiple of {k}.", f"n % {k} == 0",
                  [(n,) for n in (0, k, k + 1, 3 * k, 2 * k - 1)])
    if kind == 3:
        return fn("sum_list", "xs", "Return the sum of the numbers in xs.", "sum(xs)", [([],), ([1, 2, 3],), ([-1, 5],)])
    if kind == 4:
        return fn("max_list", "xs", "Return the largest number in xs.", "max(xs)", [([1, 2, 3],), ([-4, -2],), ([7],)])
    if kind == 5:
        return fn("reverse_string", "s", "Return s reversed.", "s[::-1]", [("abc",), ("",), ("xy",)])
    if kind == 6:
        c = rng.choice("abcde")
        return fn(f"count_{c}", "s", f"Return how many times '{c}' occurs in s.", f"s.count('{c}')",
                  [("",), (c * 3,), (f"x{c}y{c}",), ("zzz",)])
    if kind == 7:
        k = rng.randint(2, 9)
        return fn(f"repeat_{k}", "s", f"Return s repeated {k} times.", f"s * {k}", [("a",), ("ab",), ("",)])
    if kind == 8:
        k = rng.randint(0, 20)
        return fn(f"greater_than_{k}", "xs", f"Return the items of xs greater than {k}, in order.",
                  f"[x for x in xs if x > {k}]", [(xs_of(rng, -5, 15),), ([],)])
    lo = rng.randint(0, 5)
    hi = lo + rng.randint(3, 10)
    return fn(f"clamp_{lo}_{hi}", "x", f"Return x limited to the range {lo}..{hi}.", f"min(max(x, {lo}), {hi})",
              [(x,) for x in (lo - 3, lo, hi + 4, (lo + hi) // 2)])


def _known(rng: random.Random) -> Spec:
    """An SFT family member: level 1 three times in four, else level 2."""
    if rng.random() < 0.75:
        return _level1(rng)
    spec = rng.choice(SFT2)(rng)
    assert isinstance(spec, Spec)
    return spec


_OTHER_NAMES = {"x": ("n", "value", "num", "a"), "n": ("x", "num", "k"), "s": ("text", "word", "t"),
                "xs": ("nums", "items", "values")}
_HINTS = {"x": "int", "n": "int", "s": "str", "xs": "list"}


def _word(name: str) -> re.Pattern[str]:
    return re.compile(rf"(?<!')\b{name}\b(?!')")  # the parameter, never a quoted character such as 's'


def _renamed(spec: Spec, rng: random.Random) -> Spec:
    new = rng.choice(_OTHER_NAMES[spec.args])
    pat = _word(spec.args)
    return spec._replace(args=new, doc=pat.sub(new, spec.doc), expr=pat.sub(new, spec.expr))


def _hinted(spec: Spec) -> Spec:
    name = spec.args.split(":")[0]
    for plain, hint in _HINTS.items():
        if _word(plain).fullmatch(name) or name in _OTHER_NAMES[plain]:
            return spec._replace(args=f"{name}: {hint}")
    raise ValueError(f"no annotation for parameter {name!r}")


def _reworded(spec: Spec, start: str) -> Spec:
    doc = spec.doc.removeprefix("Return ")
    return spec._replace(doc=f"{start} {doc.rstrip('.')}" if start == "return" else f"{start} {doc}")


# level 3 (production, day 0), 4 (day 1), 5 (day 2)


def _other_parameter(rng: random.Random) -> Spec:
    return _renamed(_known(rng), rng)


def _type_hints(rng: random.Random) -> Spec:
    return _hinted(_known(rng))


def _other_words(rng: random.Random) -> Spec:
    return _reworded(_known(rng), rng.choice(["return", "Returns"]))


def _two_operations(rng: random.Random) -> Spec:
    """Two level-1 operations, one after the other."""
    kind = rng.randrange(5)
    a, b = rng.randint(1, 20), rng.randint(2, 9)
    if kind == 0:
        return fn(f"add_{a}_then_times_{b}", "x", f"Return x plus {a}, then times {b}.", f"(x + {a}) * {b}",
                  [(x,) for x in _XS])
    if kind == 1:
        return fn(f"times_{b}_then_add_{a}", "x", f"Return x times {b}, then plus {a}.", f"x * {b} + {a}",
                  [(x,) for x in _XS])
    if kind == 2:
        return fn(f"greater_than_{a}_then_sum", "xs", f"Return the sum of the items of xs greater than {a}.",
                  f"sum([x for x in xs if x > {a}])", [(xs_of(rng, -5, 25),), ([],)])
    if kind == 3:
        return fn(f"greater_than_{a}_then_count", "xs", f"Return how many items of xs are greater than {a}.",
                  f"len([x for x in xs if x > {a}])", [(xs_of(rng, -5, 25),), ([],)])
    return fn(f"reverse_then_repeat_{b}", "s", f"Return s reversed, repeated {b} times.", f"s[::-1] * {b}",
              [("ab",), ("",), ("xyz",)])


# level 6 (the frozen test suite): its own docstring wording, and two shifts at once


def _give_back(rng: random.Random) -> Spec:
    return _reworded(_known(rng), "Give back")


def _renamed_and_hinted(rng: random.Random) -> Spec:
    return _hinted(_renamed(_known(rng), rng))


def _renamed_give_back(rng: random.Random) -> Spec:
    return _reworded(_renamed(_known(rng), rng), "Give back")


SHIFTED: dict[int, tuple[Family, ...]] = {
    3: (_other_parameter,),
    4: (_type_hints,),
    5: (_other_words, _other_words, _other_words, _two_operations),
    6: (_give_back, _renamed_and_hinted, _renamed_give_back),
}
"""Families of the levels beyond the SFT data (3-5 production, 6 test); a family listed twice is drawn
twice as often."""
