"""Where a training task came from, as `meta["source"]`: read and written here only.

The task set tags each task (`pool`: mined from the logs; `replay`: the train suites; `variant`: drawn
like a mined failure; `dev`: the dev split) and the trainers mix and count by it. A task nobody tagged is
`given` (a task list passed in by hand)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from flywheel.tasks.base import Task

POOL, REPLAY, VARIANT, DEV, GIVEN = "pool", "replay", "variant", "dev", "given"


def source_of(task: Task) -> str:
    """The task's `meta["source"]` (`given` when untagged)."""
    return str((task.meta or {}).get("source", GIVEN))


def tagged(tasks: Sequence[Task], source: str, **meta: object) -> list[Task]:
    """Copies of `tasks` tagged with `source` (and any further `meta` keys)."""
    return [dataclasses.replace(t, meta={**(t.meta or {}), "source": source, **meta}) for t in tasks]
