"""Math word problems with numeric answers, from templates, sized for a tiny model.

Difficulty grows with the number of operations and the size of the numbers. The gold
solution ends with `Answer: N`, the format the verifier extracts first.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from flywheel.environments.task import Task, stable_task_id

NAMES = ["Ana", "Ben", "Cleo", "Dev", "Eli", "Fay", "Gus", "Hana", "Ivo", "Jun", "Kai", "Lea", "Max", "Nia"]
ITEMS = ["apples", "marbles", "books", "coins", "stickers", "pens", "cards", "shells", "stamps", "cookies"]


def _one_step(rng: random.Random, hi: int) -> tuple[str, str, int]:
    name, item = rng.choice(NAMES), rng.choice(ITEMS)
    a = rng.randint(2, hi)
    kind = rng.choice(["add", "sub", "mul"])
    if kind == "add":
        b = rng.randint(1, hi)
        text = f"{name} has {a} {item}. {name} gets {b} more. How many {item} does {name} have now?"
        return text, f"{a} + {b} = {a + b}", a + b
    if kind == "sub":
        b = rng.randint(1, a - 1)
        text = f"{name} has {a} {item}. {name} gives away {b}. How many {item} does {name} have left?"
        return text, f"{a} - {b} = {a - b}", a - b
    b = rng.randint(2, 5)
    text = f"{name} has {b} bags with {a} {item} in each bag. How many {item} does {name} have?"
    return text, f"{b} * {a} = {a * b}", a * b


def _two_step(rng: random.Random, hi: int) -> tuple[str, str, int]:
    name, item = rng.choice(NAMES), rng.choice(ITEMS)
    a, b = rng.randint(2, hi), rng.randint(1, hi)
    c = rng.randint(1, a + b - 1)
    text = (
        f"{name} has {a} {item}. {name} gets {b} more, then gives away {c}. "
        f"How many {item} does {name} have now?"
    )
    return text, f"{a} + {b} = {a + b}. {a + b} - {c} = {a + b - c}", a + b - c


def make_math_task(rng: random.Random, level: int = 1) -> Task:
    """One problem. level 1: one operation, numbers up to 20; 2: up to 50; 3: two operations."""
    hi = {1: 20, 2: 50}.get(level, 30)
    text, work, answer = _two_step(rng, hi) if level >= 3 else _one_step(rng, hi)
    return Task(
        task_id=stable_task_id("math", text),
        domain="math",
        prompt=text,
        reference={"answer": str(answer)},
        solution=f"{work}. Answer: {answer}",
        meta={"level": level},
    )


def math_suite(n: int, seed: int, levels: tuple[int, ...] = (1, 2, 3), keep: Callable[[Task], bool] = lambda t: True) -> list[Task]:
    """`n` distinct problems, deterministic in `seed`."""
    rng = random.Random(seed)
    out: dict[str, Task] = {}
    for _ in range(n * 50):
        if len(out) >= n:
            break
        t = make_math_task(rng, rng.choice(levels))
        if keep(t):
            out.setdefault(t.task_id, t)
    return list(out.values())
