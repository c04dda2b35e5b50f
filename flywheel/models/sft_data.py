"""The tiny model's SFT data: train-suite gold solutions, math worked digit by digit (some answers wrong where
the recipe injects noise), agent calls with or without a worked plan before each, code per SFT level.

The noise is what makes the tiny model a good RL starting point: the correct answer stays
the mode, but temperature-1 samples are diffuse, so pass@1 sits well below pass@k and
sharpening (GRPO) has room to raise it.
"""

from __future__ import annotations

import random
import re

from flywheel.environments.agent.plan import render_plan_trajectory
from flywheel.environments.registry import default_environments
from flywheel.environments.task import Task
from flywheel.models.recipe import TinyModelRecipe
from flywheel.tasks.suites import TRAIN_SEED, train_suite

_OP = re.compile(r"(\d+) ([+\-*]) (\d+) = (\d+)")


def _digits(n: int) -> list[int]:
    return [int(c) for c in reversed(str(n))]


def _add(x: int, y: int) -> str:
    if x < 10 and y < 10:
        return f"{x}+{y}={x + y}"
    dx, dy, carry, parts = _digits(x), _digits(y), 0, []
    for i in range(max(len(dx), len(dy))):
        a, b = (dx[i] if i < len(dx) else 0), (dy[i] if i < len(dy) else 0)
        s = a + b + carry
        parts.append(f"{a}+{b}{'+1' if carry else ''}={s}")
        carry = s // 10
    return f"{x}+{y}: " + ", ".join(parts) + f" so {x + y}"


def _sub(x: int, y: int) -> str:
    if x < 10:
        return f"{x}-{y}={x - y}"
    dx, dy, borrow, parts = _digits(x), _digits(y), 0, []
    for i in range(len(dx)):
        top, b = dx[i] - borrow, (dy[i] if i < len(dy) else 0)
        borrow = 1 if top < b else 0
        top += 10 * borrow
        parts.append(f"{top}-{b}={top - b}")
    return f"{x}-{y}: " + ", ".join(parts) + f" so {x - y}"


def _mul(k: int, x: int) -> str:
    if x < 10:
        return f"{k}*{x}={k * x}"
    dx, carry, parts = _digits(x), 0, []
    for d in dx:
        s = k * d + carry
        parts.append(f"{k}*{d}{f'+{carry}' if carry else ''}={s}")
        carry = s // 10
    return f"{k}*{x}: " + ", ".join(parts) + f" so {k * x}"


def scratchpad(solution: str) -> str:
    """The gold math solution with each operation worked digit by digit (units first, with carries).

    A ~1M-parameter model cannot add two-digit numbers in one token step, but it can learn
    single-digit facts and copying; the verifier only reads `Answer: N`.
    """
    steps = []
    for a, op, b, _ in _OP.findall(solution):
        a, b = int(a), int(b)
        steps.append(_add(a, b) if op == "+" else _sub(a, b) if op == "-" else _mul(a, b))
    ans = solution.rsplit("Answer: ", 1)[1]
    return ". ".join(steps) + f". Answer: {ans}"


def _perturb_answer(solution: str, answer: str, rng: random.Random) -> str:
    """The same work with a wrong final `Answer:` (a plausible slip, never negative)."""
    a = int(answer)
    wrong = max(0, a + rng.choice([-3, -2, -1, 1, 2, 3]))
    if wrong == a:
        wrong = a + 1
    head, _, _ = solution.rpartition(f"Answer: {answer}")
    return f"{head}Answer: {wrong}"


MAX_EXTRA_CHARS = 380
"""An extra domain's example longer than this (prompt + answer, characters) could be cut by SFT's
`max_len` (256 tokens; measured: tiny-v1's tokenizer makes 1.3-1.8 characters a token of
reasoning-gym text): left out rather than taught without its answer."""


def agent_target(task: Task, agent_format: str) -> str:
    """An agent task's SFT target: its gold calls (`direct`), or with a worked plan before each (`plan`)."""
    if agent_format == "plan":
        return render_plan_trajectory(task.reference["initial_state"], task.reference["goal"])
    return task.solution


def code_tasks(recipe: TinyModelRecipe) -> list[Task]:
    """`n_code` code train tasks from each of `recipe.code_levels`; a code environment without levels has one
    suite, which only the default `(1,)` may ask for."""
    env = default_environments().for_domain("code")
    have = env.levels("code")
    if not have:
        if tuple(recipe.code_levels) != (1,):
            raise ValueError(f"code_levels {recipe.code_levels}: the code environment has no levels")
        return train_suite("code", recipe.n_code)
    out: dict[str, Task] = {}
    for lv in recipe.code_levels:
        for t in env.tasks("code", "train", recipe.n_code, TRAIN_SEED, level=lv):
            out.setdefault(t.task_id, t)
    return list(out.values())


def sft_mix(recipe: TinyModelRecipe) -> list[tuple[str, str, str]]:
    """(domain, prompt, response) training examples: train suites only, math partly noisy."""
    rng = random.Random(recipe.seed)
    out: list[tuple[str, str, str]] = []
    for t in train_suite("math", recipe.n_math):
        sol = scratchpad(t.solution) if recipe.math_format == "scratchpad" else t.solution
        if rng.random() < recipe.math_noise:
            sol = _perturb_answer(sol, t.reference["answer"], rng)
        out.append(("math", t.prompt, sol))
    out += [("code", t.prompt, t.solution) for t in code_tasks(recipe)]
    out += [("agent", t.prompt, agent_target(t, recipe.agent_format)) for t in train_suite("agent", recipe.n_agent)]
    for domain in recipe.extra_domains:  # installed environments' domains: their gold solutions
        out += [(domain, t.prompt, t.solution) for t in train_suite(domain, recipe.n_extra)
                if len(t.prompt) + len(t.solution) <= MAX_EXTRA_CHARS]
    return out
