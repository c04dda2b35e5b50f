"""`Task` under its old import path: it is part of the environment protocol (`flywheel.environments.task`)."""

from flywheel.environments.task import Task, dumps, stable_task_id

__all__ = ["Task", "dumps", "stable_task_id"]
