"""The shape every code family shares: a function header (signature and one-line docstring), a one-line
gold body, and `check` asserts whose expected values come from running the gold body on the inputs, so
a family's gold solution passes its own test by construction.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable
from typing import Any, NamedTuple


class Spec(NamedTuple):
    """A family member before it is written out: `def name(args)` documented by `doc`, whose gold body
    returns `expr`; one assert per input tuple in `cases`, expecting what the gold body returns."""

    name: str
    args: str
    doc: str
    expr: str
    cases: list[tuple[Any, ...]]


Family = Callable[[random.Random], "tuple[str, str, str, list[str]] | Spec"]
"""rng -> (function name, signature+docstring, body, list of assert lines over `candidate`), or a `Spec`."""


def header(name: str, args: str, doc: str) -> str:
    return f"def {name}({args}):\n    \"\"\"{doc}\"\"\"\n"


@functools.lru_cache(maxsize=8192)
def _gold(args: str, expr: str) -> Callable[..., Any]:
    ns: dict[str, Any] = {}
    exec(f"def f({args}):\n    return {expr}\n", ns)  # noqa: S102 - the families' own expressions, never model output
    return ns["f"]


def fn(name: str, args: str, doc: str, expr: str, cases: list[tuple[Any, ...]]) -> Spec:
    return Spec(name, args, doc, expr, cases)


def written(spec: Spec) -> tuple[str, str, str, list[str]]:
    """(function name, header, gold body, asserts) of `spec`."""
    gold = _gold(spec.args, spec.expr)
    asserts = [f"assert candidate({', '.join(map(repr, c))}) == {gold(*c)!r}" for c in spec.cases]
    return spec.name, header(spec.name, spec.args, spec.doc), f"    return {spec.expr}\n", asserts


def xs_of(rng: random.Random, lo: int, hi: int, n: int = 6) -> list[int]:
    """`n` random integers in lo..hi: a list input for an assert."""
    return [rng.randint(lo, hi) for _ in range(n)]
