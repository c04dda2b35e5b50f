"""Small Python functions with unit tests, in HumanEval's format (`prompt`, `entry_point`, `test`).

Each family is a signature, a docstring, a one-line body and a `check(candidate)` of
asserts; parameters vary per task so the tiny model must read the prompt.

Levels, disjoint by construction (each level's function names, parameters,
docstring wordings or constants are its own; `tests/environments/code/test_levels.py`):
- SFT (`SFT_LEVELS`): 1, the ten families below (what tiny-v1 and tiny-v2 were taught; unchanged), and 2,
  new operations and wider constants in the same shape (`sft_families.py`);
- production only (`PRODUCTION_LEVELS`, level -> first world day), near variations of the SFT families
  (`shifted.py`): 3 another parameter name (day 0), 4 a type-hinted signature (day 1), 5 the docstring in
  other words, or two known operations in one function (day 2);
- the frozen test suite (`TEST_LEVELS`): 6, a docstring wording of its own ("Give back ..."), alone or with
  another parameter name, or a renamed and annotated parameter (`shifted.py`).
"""

from __future__ import annotations

import functools
import random
import re
from collections.abc import Callable

from flywheel.environments.code.sft_families import SFT2
from flywheel.environments.code.shape import Family, Spec, written
from flywheel.environments.code.shifted import SHIFTED
from flywheel.environments.task import Task, stable_task_id


def _add_k(rng: random.Random):
    k = rng.randint(1, 30)
    name = f"add_{k}"
    return name, f"def {name}(x):\n    \"\"\"Return x plus {k}.\"\"\"\n", f"    return x + {k}\n", [
        f"assert candidate({x}) == {x + k}" for x in (0, 3, -2, 10)
    ]


def _times_k(rng: random.Random):
    k = rng.randint(2, 20)
    name = f"times_{k}"
    return name, f"def {name}(x):\n    \"\"\"Return x times {k}.\"\"\"\n", f"    return x * {k}\n", [
        f"assert candidate({x}) == {x * k}" for x in (0, 1, 4, -3)
    ]


def _is_multiple(rng: random.Random):
    k = rng.randint(2, 15)
    name = f"is_multiple_of_{k}"
    return name, f"def {name}(n):\n    \"\"\"Return True if n is a multiple of {k}.\"\"\"\n", (
        f"    return n % {k} == 0\n"
    ), [f"assert candidate({n}) == {n % k == 0}" for n in (0, k, k + 1, 3 * k, 2 * k - 1)]


def _sum_list(rng: random.Random):
    return "sum_list", "def sum_list(xs):\n    \"\"\"Return the sum of the numbers in xs.\"\"\"\n", (
        "    return sum(xs)\n"
    ), ["assert candidate([]) == 0", "assert candidate([1, 2, 3]) == 6", "assert candidate([-1, 5]) == 4"]


def _max_list(rng: random.Random):
    return "max_list", "def max_list(xs):\n    \"\"\"Return the largest number in xs.\"\"\"\n", (
        "    return max(xs)\n"
    ), ["assert candidate([1, 2, 3]) == 3", "assert candidate([-4, -2]) == -2", "assert candidate([7]) == 7"]


def _reverse(rng: random.Random):
    return "reverse_string", "def reverse_string(s):\n    \"\"\"Return s reversed.\"\"\"\n", (
        "    return s[::-1]\n"
    ), ["assert candidate('abc') == 'cba'", "assert candidate('') == ''", "assert candidate('xy') == 'yx'"]


def _count_char(rng: random.Random):
    c = rng.choice("abcde")
    name = f"count_{c}"
    return name, f"def {name}(s):\n    \"\"\"Return how many times '{c}' occurs in s.\"\"\"\n", (
        f"    return s.count('{c}')\n"
    ), [f"assert candidate({s!r}) == {s.count(c)}" for s in ("", c * 3, f"x{c}y{c}", "zzz")]


def _repeat(rng: random.Random):
    k = rng.randint(2, 9)
    name = f"repeat_{k}"
    return name, f"def {name}(s):\n    \"\"\"Return s repeated {k} times.\"\"\"\n", f"    return s * {k}\n", [
        f"assert candidate({s!r}) == {s * k!r}" for s in ("a", "ab", "")
    ]


def _filter_gt(rng: random.Random):
    k = rng.randint(0, 20)
    name = f"greater_than_{k}"
    xs = [rng.randint(-5, 15) for _ in range(6)]
    return name, f"def {name}(xs):\n    \"\"\"Return the items of xs greater than {k}, in order.\"\"\"\n", (
        f"    return [x for x in xs if x > {k}]\n"
    ), [f"assert candidate({xs}) == {[x for x in xs if x > k]}", "assert candidate([]) == []"]


def _clamp(rng: random.Random):
    lo = rng.randint(0, 5)
    hi = lo + rng.randint(3, 10)
    name = f"clamp_{lo}_{hi}"
    return name, f"def {name}(x):\n    \"\"\"Return x limited to the range {lo}..{hi}.\"\"\"\n", (
        f"    return min(max(x, {lo}), {hi})\n"
    ), [f"assert candidate({x}) == {min(max(x, lo), hi)}" for x in (lo - 3, lo, hi + 4, (lo + hi) // 2)]


FAMILIES: tuple[Family, ...] = (
    _add_k, _times_k, _is_multiple, _sum_list, _max_list, _reverse, _count_char, _repeat, _filter_gt, _clamp,
)
"""Level 1: the families tiny-v1 and tiny-v2 were taught."""

SFT_LEVELS = (1, 2)
PRODUCTION_LEVELS = {3: 0, 4: 1, 5: 2}
"""Production-only levels -> the first world day users ask them. Measured on tiny-v2 (taught level 1 only;
60 tasks x 8 samples at 0.7, pass@1 / pass@8): level 3 0.07 / 0.15, 4 0.03 / 0.10, 5 0.02 / 0.08 (two
operations 0 / 0: its share, a quarter, waits for a model taught level 2); test level 6 0.015 / 0.03; level 1
held out 0.59 / 0.79 (24 tasks), level 2 held out 0.08 / 0.08 (only times_k with k 21..40). A model of the
same size taught levels 1 and 2 (1,000 SFT steps, 400 code tasks a level, less math and agent than tiny-v3):
level 2 held out 0.43 / 0.55, production 3 0.14 / 0.27, 4 0.20 / 0.35, 5 0.21 / 0.32, test 6 0.05 / 0.10."""
TEST_LEVELS = (6,)
_WEIGHT = {2: 4}
"""How often a draw over several levels picks each (1 when absent): level 2 has ~9x level 1's prompts."""


def _families(level: int) -> tuple[Family, ...]:
    if level == 1:
        return FAMILIES
    return SFT2 if level == 2 else SHIFTED[level]


def make_code_task(rng: random.Random, level: int = 1) -> Task:
    """One task of `level` (1: the ten original families, drawn exactly as before levels existed)."""
    return family_task(rng.choice(_families(level)), rng, level)


def family_task(family: Family, rng: random.Random, level: int) -> Task:
    """A task of `family` (one of `level`'s)."""
    out = family(rng)
    name, header, body, asserts = written(out) if isinstance(out, Spec) else out
    test = "def check(candidate):\n" + "".join(f"    {a}\n" for a in asserts)
    meta = ({"family": name.rstrip("0123456789_")} if level == 1
            else {"family": family.__name__.lstrip("_"), "level": level})
    return Task(
        task_id=stable_task_id("code", header),
        domain="code",
        prompt=header,
        reference={"entry_point": name, "test": test, "canonical_solution": body},
        solution=f"```python\n{header}{body}```",
        meta=meta,
    )


def task_level(task: Task) -> int:
    """A code task's level (level-1 tasks carry only their family, as before levels existed)."""
    return int((task.meta or {}).get("level", 1))


def code_suite(n: int, seed: int, levels: tuple[int, ...] = SFT_LEVELS,
               keep: Callable[[Task], bool] = lambda t: True) -> list[Task]:
    """Up to `n` distinct tasks of `levels` passing `keep`, deterministic in `seed`. One level draws its
    families alone (level 1 exactly as the single suite did); several pick a level per task (`_WEIGHT`)."""
    rng = random.Random(seed)
    out: dict[str, Task] = {}
    for _ in range(n * 50):
        if len(out) >= n:
            break
        t = make_code_task(rng, levels[0] if len(levels) == 1 else rng.choices(levels, [_WEIGHT.get(lv, 1) for lv in levels])[0])
        if keep(t):
            out.setdefault(t.task_id, t)
    return list(out.values())


def _shape(prompt: str) -> str:
    """A header with its function name, quoted literals and numbers masked: one family's template."""
    s = re.sub(r"\s+", " ", prompt.strip())
    s = re.sub(r"'[^']*'", "'_'", s)
    s = re.sub(r"^def \w+\(", "def _(", s)
    return re.sub(r"\d+", "#", s)


@functools.cache
def _shapes() -> dict[str, int]:
    """Each SFT and production level's family templates -> the level (the highest where two share one);
    test levels are left out, so their prompts have no level."""
    out: dict[str, int] = {}
    for level in (*SFT_LEVELS, *PRODUCTION_LEVELS):
        for t in code_suite(1000, 5, (level,)):
            out[_shape(t.prompt)] = max(level, out.get(_shape(t.prompt), 0))
    return out


def code_level(prompt: str) -> int | None:
    """The level of a logged code prompt, by its family's template (None: a test level or an unknown one)."""
    return _shapes().get(_shape(prompt))
