"""math in simulated production: a tutor's users, and the made-up model's answers (right, wrong, unfinished,
timed out, refused)."""

from __future__ import annotations

import random

from flywheel.environments.production import REFUSALS, ProductionProfile, outcome
from flywheel.environments.task import Task


def difficulty(task: Task) -> float:
    """0 (easy) .. 1 (hard) from the problem's level (production-only levels are the hardest)."""
    return min(1.0, (int((task.meta or {}).get("level", 2)) - 1) / 2)


def respond(task: Task, mode: str, rng: random.Random) -> tuple[list[dict], dict]:
    answer = int(task.reference["answer"])
    if mode == "success":
        text = rng.choice(["", "Let's solve it step by step. "]) + task.solution
    elif mode == "wrong_answer":
        wrong = answer + rng.choice([d for d in (-10, -2, -1, 1, 2, 10) if answer + d >= 0] or [1])
        work = task.solution.rsplit("Answer:", 1)[0].rstrip()
        text = f"{work} Answer: {wrong}" if rng.random() < 0.5 else f"I think it is {wrong}. Answer: {wrong}"
    elif mode == "format_error":
        text = rng.choice([
            "Let me work through this step by step. First, I need to figure out what the question is asking",
            "The answer can be found by combining the quantities in the question.",
            "We should add or subtract the numbers given in the problem, depending on the wording",
        ])
    elif mode == "timeout":
        return [{"role": "assistant", "content": ""}], outcome(
            mode, error="TimeoutError: generation exceeded the 30 s deadline", latency_ms=30000)
    else:  # refused
        text = rng.choice(REFUSALS)
    return [{"role": "assistant", "content": text}], outcome(mode)


PROFILE = ProductionProfile(
    system_prompt="You are a helpful math tutor. Work step by step and end with 'Answer: <number>'.",
    share=0.4, universe=600, base_logit=2.5,
    failure_weights={"wrong_answer": 0.62, "format_error": 0.2, "timeout": 0.08, "refused": 0.1},
    difficulty=difficulty, respond=respond,
)
