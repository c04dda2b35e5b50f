"""The task generator: deterministic from the seed, disjoint splits, levels, and a catalogue that holds."""

from __future__ import annotations

import ast

import pytest

from flywheel.environments.repo.generator import LEVELS, defects, generate, make_task, task_count
from flywheel.environments.repo.programs import KINDS, PROGRAMS, inject, stub


def test_catalogue_shape():
    assert len(PROGRAMS) >= 15
    kinds = {b.kind for p in PROGRAMS for b in p.defects()}
    assert kinds == set(KINDS)
    for p in PROGRAMS:
        for b in p.defects():
            src = inject(p, b)
            assert src != p.source, (p.name, b)
            ast.parse(src)


def test_stub_keeps_signature_and_docstring():
    src = 'class A:\n    def f(self, x):\n        """Doc."""\n        y = x\n        return y\n\n    def g(self):\n        return 1\n'
    out = stub(src, "A.f")
    assert '"""Doc."""' in out and "raise NotImplementedError('A.f')" in out and "return y" not in out
    assert "def g(self):\n        return 1" in out


def test_same_arguments_same_tasks():
    a = [t.to_dict() for t in generate("train", 12, seed=5)]
    b = [t.to_dict() for t in generate("train", 12, seed=5)]
    assert a == b
    assert [t["task_id"] for t in a] != [t.task_id for t in generate("train", 12, seed=6)]
    assert len({t["task_id"] for t in a}) == 12


def test_splits_are_disjoint_by_defect():
    train = {d.key for d in defects("train")}
    held = {d.key for d in defects("heldout")}
    assert train and held and not train & held
    ids_train = {t.task_id for t in generate("train", task_count("train"), seed=0)}
    ids_held = {t.task_id for t in generate("heldout", task_count("heldout"), seed=0)}
    assert len(ids_train) == task_count("train") and len(ids_held) == task_count("heldout")
    assert not ids_train & ids_held
    held_keys = {(t.meta["program"], t.meta["func"], t.meta["kind"]) for t in generate("heldout", 50, seed=1)}
    train_keys = {(t.meta["program"], t.meta["func"], t.meta["kind"]) for t in generate("train", 200, seed=1)}
    assert held_keys - train_keys  # held-out defects are not merely relabelled training ones


@pytest.mark.parametrize("level, modules", [(1, 1), (2, 3), (3, 5)])
def test_levels_set_the_repository_size(level, modules):
    t = generate("train", 1, seed=0, level=level)[0]
    files = t.reference["files"]
    assert sum(1 for p in files if p.endswith(".py") and not p.startswith("tests/")) == modules
    assert len(t.reference["test_files"]) == modules and len(t.reference["hidden_tests"]) == modules
    assert not any(p in files for p in t.reference["hidden_tests"])  # hidden tests never in the tree


def test_bad_level_is_rejected():
    with pytest.raises(ValueError, match="level"):
        make_task(defects("train")[0], level=max(LEVELS) + 1)
