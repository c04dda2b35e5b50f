"""Deterministic repo tasks: a defect injected into one correct program of a small repository.

A task's *identity* is (program, defect); its *variant* picks which other programs share the
repository (distractors, with their own tests, which the fix must not break). Everything follows
from (split, seed, level, n) through seeded `random.Random`s and content hashes, so the same
arguments give byte-identical tasks on every machine. The split is decided by the defect's content
(`is_heldout`), so a held-out task's defect never appears in training, whatever the variant.
Levels: 1 = the buggy program alone, 2 = with two other programs, 3 = with four.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass

from flywheel.environments.base import check_split, is_heldout
from flywheel.environments.repo.programs import PROGRAMS, Bug, Program, inject
from flywheel.environments.repo.snapshot import Snapshot
from flywheel.environments.repo.spec import make_reference
from flywheel.environments.repo.tools import RepoState, apply_call
from flywheel.environments.task import Task
from flywheel.environments.toolcalls import ToolCall, format_call, format_result

DOMAIN = "repo"
LEVELS = (1, 2, 3)
DEFAULT_LEVEL = 2
DISTRACTORS = {1: 0, 2: 2, 3: 4}
VARIANTS = 3
"""Distractor layouts per (defect, level) where a level has distractors: disjoint sets of other programs."""


@dataclass(frozen=True)
class Defect:
    program: Program
    bug: Bug

    @property
    def key(self) -> str:
        b = self.bug
        return f"{self.program.name}|{b.kind}|{b.func}|{b.old}|{b.new}"


def defects(split: str) -> list[Defect]:
    """Every catalogued defect of `split`, in catalogue order."""
    check_split(split)
    out = [Defect(p, b) for p in PROGRAMS for b in p.defects()]
    return [d for d in out if is_heldout(d.key) == (split == "heldout")]


def _issue(d: Defect) -> str:
    p, b = d.program, d.bug
    if b.kind == "missing feature":
        return (f"Feature request: `{b.func}` in {p.module_path} ({p.summary}) is not implemented yet; it raises "
                "NotImplementedError. Implement it as its docstring, the rest of the module and the tests describe.")
    return (f"Bug report: {p.module_path} ({p.summary}) gives wrong results for some inputs; the faulty code is "
            f"in or used by `{b.func}`. Find the defect and fix it.")


def _prompt(d: Defect, modules: list[str]) -> str:
    return (f"You are working in a small Python repository with the modules {', '.join(modules)} and their tests "
            f"under tests/. {_issue(d)} Use the tools to list and read files, edit them, and run the visible "
            "tests; do not change or delete the tests. Call submit when you are done.")


def gold_calls(d: Defect, buggy: str) -> list[tuple[str, dict]]:
    """The known fix as tool calls: a one-snippet patch when the injected text is unique, else a rewrite."""
    p, b = d.program, d.bug
    calls: list[tuple[str, dict]] = [("read_file", {"path": p.module_path})]
    if b.kind != "missing feature" and b.new and buggy.count(b.new) == 1:
        calls.append(("patch_file", {"path": p.module_path, "old": b.new, "new": b.old}))
    else:
        calls.append(("write_file", {"path": p.module_path, "content": p.source}))
    return calls + [("submit", {})]


def render(state: RepoState, calls: list[tuple[str, dict]]) -> str:
    """Calls interleaved with what the tools answer (the multi-step rollout text); `run_tests` not executed."""
    parts = []
    for name, args in calls:
        obs = apply_call(state, ToolCall(name, args), None)
        parts.append(format_call(name, args) + format_result(obs.content))
    return "".join(parts)


def make_task(d: Defect, level: int = DEFAULT_LEVEL, variant: int = 0) -> Task:
    """The repository with `d` injected, `DISTRACTORS[level]` other programs, layout `variant`."""
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, got {level!r}")
    seed = int.from_bytes(hashlib.sha256(f"{d.key}|{level}".encode()).digest()[:8], "big")
    others = [p for p in PROGRAMS if p.name != d.program.name]
    random.Random(seed).shuffle(others)
    k = DISTRACTORS[level]
    if variant not in range(variants(level)) or k * variants(level) > len(others):
        raise ValueError(f"variant must be in range({variants(level)}) at level {level}, got {variant!r}")
    progs = sorted([d.program, *others[variant * k:(variant + 1) * k]], key=lambda p: p.name)
    buggy = inject(d.program, d.bug)
    files: dict[str, str] = {}
    for p in progs:
        files[p.module_path] = buggy if p is d.program else p.source
        files[p.visible_path] = p.visible_test
    modules = [p.module_path for p in progs]
    files["README.md"] = "# utilities\n\n" + "".join(f"- `{p.module_path}`: {p.summary}\n" for p in progs) + (
        "\nTests are plain `test_*` functions under `tests/`.\n")
    ref = make_reference(files, [p.visible_path for p in progs], {p.hidden_path: p.hidden_test for p in progs},
                         fix={d.program.module_path: d.program.source})
    state = RepoState.start(Snapshot.of(files))
    prompt = _prompt(d, modules)
    tid = "repo-" + hashlib.sha256(f"{ref['snapshot_sha256']}|{prompt}".encode()).hexdigest()[:12]
    return Task(tid, DOMAIN, prompt, ref, render(state, gold_calls(d, buggy)),
                meta={"program": d.program.name, "kind": d.bug.kind, "func": d.bug.func, "level": level,
                      "variant": variant, "snapshot_sha256": ref["snapshot_sha256"]})


def variants(level: int) -> int:
    """Distinct repositories per defect at `level` (one when it has no distractors)."""
    return VARIANTS if DISTRACTORS[level] else 1


def task_count(split: str, level: int | None = None) -> int:
    return len(defects(split)) * variants(DEFAULT_LEVEL if level is None else level)


def generate(split: str, n: int, seed: int, level: int | None = None) -> list[Task]:
    """Up to `n` distinct tasks of `split`: defects in a seeded order, variants after all defects are used."""
    pool = defects(split)
    random.Random(f"repo|{split}|{seed}").shuffle(pool)
    lvl = DEFAULT_LEVEL if level is None else level
    n = min(n, len(pool) * variants(lvl))
    return [make_task(pool[i % len(pool)], lvl, i // len(pool)) for i in range(n)]
