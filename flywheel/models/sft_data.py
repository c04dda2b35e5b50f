"""The tiny model's SFT data: train-suite gold solutions, math worked digit by digit (some answers wrong where
the recipe injects noise), agent calls with or without a worked plan before each, code per SFT level.

The noise is what makes the tiny model a good RL starting point: the correct answer stays
the mode, but temperature-1 samples are diffuse, so pass@1 sits well below pass@k and
sharpening (GRPO) has room to raise it.
"""

from __future__ import annotations

import random

from flywheel.environments.registry import default_environments
from flywheel.environments.targets import sft_target
from flywheel.environments.task import Task
from flywheel.models.recipe import TinyModelRecipe
from flywheel.tasks.suites import TRAIN_SEED, train_suite


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
    formats = {"math_format": recipe.math_format, "agent_format": recipe.agent_format}
    out: list[tuple[str, str, str]] = []
    for t in train_suite("math", recipe.n_math):
        sol = sft_target(t, formats)
        if rng.random() < recipe.math_noise:
            sol = _perturb_answer(sol, t.reference["answer"], rng)
        out.append(("math", t.prompt, sol))
    out += [("code", t.prompt, t.solution) for t in code_tasks(recipe)]
    out += [("agent", t.prompt, sft_target(t, formats)) for t in train_suite("agent", recipe.n_agent)]
    for domain in recipe.extra_domains:  # installed environments' domains: their gold solutions
        out += [(domain, t.prompt, t.solution) for t in train_suite(domain, recipe.n_extra)
                if len(t.prompt) + len(t.solution) <= MAX_EXTRA_CHARS]
    return out
