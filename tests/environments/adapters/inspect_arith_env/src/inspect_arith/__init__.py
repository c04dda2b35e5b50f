"""An Inspect task written as Inspect's docs show: a `@task` returning `Task(dataset, solver, scorer)`."""

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import match
from inspect_ai.solver import generate


@task
def arith_qa():
    samples = [Sample(input=f"What is {a} + {b}? End your reply with the number.", target=str(a + b), id=f"{a}+{b}")
               for a in range(3, 11) for b in range(20, 25)]
    return Task(dataset=samples, solver=generate(), scorer=match(numeric=True))
