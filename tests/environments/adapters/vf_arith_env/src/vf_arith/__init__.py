"""Multiply two numbers, answering inside <answer></answer>: a `verifiers`-style environment package.

Its rubric runs the answer as a Python expression (so `17*23` and `391` both count) in the sandbox it is
given, never in the process scoring it, and gives a small format reward for the tags.
"""

from __future__ import annotations

import random
import re


class XMLParser:
    """The `verifiers` parser shape: `parse_answer(completion)` and `format(**fields)`."""

    def parse_answer(self, completion):
        text = completion if isinstance(completion, str) else (completion[-1]["content"] if completion else "")
        found = re.findall(r"<answer>(.*?)</answer>", text or "", re.S)
        return found[-1].strip() if found else None

    def format(self, answer):
        return f"<answer>{answer}</answer>"


class Rubric:
    def __init__(self, funcs, weights, parser):
        self.funcs, self.weights, self.parser = funcs, weights, parser


class SingleTurnEnv:
    message_type = "chat"

    def __init__(self, dataset, eval_dataset, system_prompt, rubric):
        self.dataset, self.eval_dataset, self.system_prompt, self.rubric = dataset, eval_dataset, system_prompt, rubric
        self.parser = rubric.parser


async def evaluates_to_answer(completion, answer, parser, sandbox) -> float:
    expr = parser.parse_answer(completion)
    if not expr or len(expr) > 200:
        return 0.0
    res = sandbox.run(f"print({expr})")  # the model's expression runs in the sandbox handed in
    return float(res.exit_code == 0 and res.stdout.strip() == str(answer))


def has_tags(completion, parser) -> float:
    return float(parser.parse_answer(completion) is not None)


def _rows(rng, n):
    out = []
    for _ in range(n):
        a, b = rng.randint(2, 40), rng.randint(2, 40)
        out.append({"question": f"What is {a} * {b}? Answer inside <answer></answer>.", "answer": str(a * b),
                    "info": {"a": a, "b": b}, "task": "arith"})
    return out


def load_environment(n_train: int = 40, n_eval: int = 10, seed: int = 0):
    rng = random.Random(seed)
    train, evals = _rows(rng, n_train), _rows(rng, n_eval)
    parser = XMLParser()
    return SingleTurnEnv(train, evals, "You are a careful calculator.",
                         Rubric([evaluates_to_answer, has_tags], [1.0, 0.2], parser))
