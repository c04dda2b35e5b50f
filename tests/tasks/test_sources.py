"""A task's source tag: one reader and one writer for the task set, RFT's variants and the GRPO scheduler."""

from __future__ import annotations

from flywheel.tasks.sources import GIVEN, POOL, VARIANT, source_of, tagged
from flywheel.tasks.suites import train_suite
from flywheel.train.grpo.scheduler import TaskScheduler
from flywheel.train.rft.variants import is_pool, is_variant


def test_untagged_is_given_and_tags_copy_without_touching_the_original():
    task = train_suite("math", 1)[0]
    assert source_of(task) == GIVEN
    [pool] = tagged([task], POOL)
    [variant] = tagged([task], VARIANT, variant_of="m-1")
    assert source_of(task) == GIVEN and "source" not in (task.meta or {})
    assert (source_of(pool), is_pool(pool), is_variant(pool)) == (POOL, True, False)
    assert (is_pool(variant), is_variant(variant), variant.meta["variant_of"]) == (False, True, "m-1")


def test_scheduler_counts_by_the_same_tag():
    tasks = tagged(train_suite("math", 3), POOL) + train_suite("code", 2)
    sched = TaskScheduler(tasks, {"math": 1.0, "code": 1.0})
    assert sorted(sched.source_of.values()) == [GIVEN, GIVEN, POOL, POOL, POOL]
