"""The `reasoning-gym` family: reasoning-gym's procedural generators, one domain `rg.<name>` each.

Only generators on the tested list (`TESTED`) become domains: each was generated twice from one
seed with identical results, survived a JSON round trip of its entries (tasks travel through logs
and the warehouse), and under this environment's verifier scored its gold answer 1.0 and empty,
wrong and hack-probe answers 0.0, at its default config and at every curriculum level
(`survey()` re-derives the list; `tests/environments/test_reasoning_gym.py` re-checks it).

A response answers with one `Answer: ...` (the rest of the text after it) or one
`<answer>...</answer>`; two answers are a failure (hedging), as is none. The generator's own
scorer judges the answer; reward is 1.0 only for a full score (partial credit is not a pass).
Difficulty: reasoning-gym's curricula, level L = the curriculum's global level L-1 (at most
`MAX_LEVELS`). The train/held-out split is by a hash of the question, so no seed moves a task
across it. Nothing here reaches the network.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import re
import threading
from typing import Any

from flywheel.environments.base import BaseEnvironment, check_split, is_heldout, task_from_dict
from flywheel.tasks.base import Task
from flywheel.verifiers.common import MAX_RESPONSE_CHARS, failed, passed, text_to_judge
from flywheel.verifiers.verdict import Verdict

PREFIX = "rg."
FAMILY = "reasoning-gym"
MAX_LEVELS = 5
INSTRUCTION = "\nGive only the final answer after 'Answer:'."
_ANSWER_RE = re.compile(r"(?i)\banswer\s*:|<answer>(.*?)</answer>", re.S)

TESTED: tuple[str, ...] = (
    "ab", "acre", "advanced_geometry", "aiw", "arc_1d", "base_conversion", "basic_arithmetic", "bf",
    "binary_alternation", "binary_matrix", "bitwise_arithmetic", "calendar_arithmetic", "chain_sum",
    "circuit_logic", "color_cube_rotation", "count_bits", "count_primes", "countdown", "course_schedule",
    "cryptarithm", "decimal_chain_sum", "dice", "emoji_mystery", "family_relationships", "futoshiki",
    "game_of_life", "gcd", "group_anagrams", "isomorphic_strings", "largest_island", "lcm", "leg_counting",
    "letter_counting", "list_functions", "mahjong_puzzle", "manipulate_matrix", "maze", "mini_sudoku",
    "needle_haystack", "number_filtering", "number_sequence", "palindrome_generation",
    "palindrome_partitioning", "path_star", "polynomial_equations", "prime_factorization", "products",
    "puzzle24", "ransom_note", "rectangle_count", "rotate_matrix", "rotten_oranges", "self_reference",
    "sentence_reordering", "shortest_path", "simple_equations", "simple_geometry", "spiral_matrix",
    "string_insertion", "string_manipulation", "string_splitting", "string_synthesis", "sudoku", "syllogism",
    "tower_of_hanoi", "tsumego", "word_sequence_reversal", "word_sorting",
)
"""Generators that passed `survey()` (determinism, JSON round trip, gold 1.0, wrong/empty/hacks 0.0)."""


def _rg_version() -> str:
    try:
        return importlib.metadata.version("reasoning-gym")
    except importlib.metadata.PackageNotFoundError:
        return "absent"


def extract_answer(text: str) -> tuple[str | None, str]:
    """The one answer in `text` and "" , or (None, why) when it holds none or several."""
    marks = list(_ANSWER_RE.finditer(text))
    if not marks:
        return None, "no 'Answer:' line"
    if len(marks) > 1:
        return None, f"{len(marks)} answers given: a response states one answer"
    m = marks[0]
    ans = m.group(1) if m.group(1) is not None else text[m.end():]
    ans = ans.strip()
    return (ans, "") if ans else (None, "empty answer")


def _jsonable(obj: Any) -> Any:
    """Entries as JSON keeps them (sets sorted into lists); anything else JSON can't hold raises TypeError."""
    def default(o: Any) -> Any:
        if isinstance(o, (set, frozenset)):
            return sorted(o, key=repr)
        raise TypeError(f"{type(o).__name__} is not JSON")

    return json.loads(json.dumps(obj, default=default))


class ReasoningGymEnvironment(BaseEnvironment):
    """Every tested reasoning-gym generator as a single-turn domain `rg.<name>`."""

    name = FAMILY
    family = FAMILY

    def __init__(self, names: tuple[str, ...] | None = None) -> None:
        self._names = tuple(TESTED if names is None else names)
        self._lock = threading.Lock()
        self._scorers: dict[str, Any] = {}
        self.version = f"rg-1+reasoning-gym-{_rg_version()}"

    # -- the domains ---------------------------------------------------------------------------
    def domains(self) -> list[str]:
        return [PREFIX + n for n in self._names]

    def _gen(self, domain: str) -> str:
        name = domain[len(PREFIX):] if domain.startswith(PREFIX) else ""
        if name not in self._names:
            raise ValueError(f"{domain!r} is not a reasoning-gym domain here; known: {self.domains()[:8]}, ...")
        return name

    def levels(self, domain: str) -> tuple[int, ...]:
        from reasoning_gym.factory import create_curriculum, has_curriculum

        name = self._gen(domain)
        if not has_curriculum(name):
            return ()
        attrs = create_curriculum(name).attributes.values()
        return tuple(range(1, min(MAX_LEVELS, max((len(a.levels) for a in attrs), default=0)) + 1))

    # -- tasks ---------------------------------------------------------------------------------
    def _config(self, name: str, seed: int, size: int, level: int | None) -> Any:
        from reasoning_gym.factory import DATASETS, create_curriculum

        if level is None:
            return DATASETS[name][1](seed=seed, size=size)
        cur = create_curriculum(name)
        cur.set_global_level(level - 1)
        return cur.generate_configuration(defaults={"seed": seed, "size": size})

    def entries(self, name: str, seed: int, size: int, level: int | None = None) -> list[dict[str, Any]]:
        """`size` raw entries of generator `name` from `seed` (JSON round-tripped)."""
        from reasoning_gym.factory import DATASETS

        cfg = self._config(name, seed, size, level)
        if hasattr(cfg, "validate"):
            cfg.validate()
        ds = DATASETS[name][0](config=cfg)
        return [_jsonable(ds[i]) for i in range(size)]

    def tasks(self, domain: str, split: str, n: int, seed: int, level: int | None = None) -> list[Task]:
        name = self._gen(domain)
        check_split(split)
        if level is not None and level not in self.levels(domain):
            raise ValueError(f"{domain}: level must be one of {self.levels(domain)}, got {level!r}")
        want = split == "heldout"
        out: dict[str, Task] = {}
        for attempt in range(8):  # a generator with few distinct tasks stops early
            if len(out) >= n:
                break
            size = max(8, (n - len(out)) * (6 if want else 2))
            sub_seed = seed if attempt == 0 else int(hashlib.sha256(f"{seed}/{attempt}".encode()).hexdigest()[:8], 16)
            for e in self.entries(name, sub_seed, size, level):
                q = str(e["question"])
                if is_heldout(q) != want or len(out) >= n:
                    continue
                t = self._task(domain, e, level)
                out.setdefault(t.task_id, t)
        return list(out.values())[:n]

    def _task(self, domain: str, entry: dict[str, Any], level: int | None) -> Task:
        prompt = str(entry["question"]) + INSTRUCTION
        answer = "" if entry.get("answer") is None else str(entry["answer"])
        tid = f"{domain}-{hashlib.sha1((prompt + chr(0) + answer).encode()).hexdigest()[:12]}"
        return Task(tid, domain, prompt, {"answer": answer, "entry": entry}, f"Answer: {answer}",
                    {"level": level, "family": FAMILY})

    # -- verification --------------------------------------------------------------------------
    def _scorer(self, name: str) -> Any:
        with self._lock:
            if name not in self._scorers:
                from reasoning_gym.factory import get_score_answer_fn

                self._scorers[name] = get_score_answer_fn(name)
            return self._scorers[name]

    def verify(self, task: Task | dict[str, Any], response: Any) -> Verdict:
        """The generator's scorer on the one stated answer; 1.0 only for a full score."""
        from flywheel.verifiers.common import TaskError

        t = task if isinstance(task, Task) else task_from_dict(str(task.get("domain") or ""), task)
        entry = t.reference.get("entry")
        name = (entry or {}).get("metadata", {}).get("source_dataset") if isinstance(entry, dict) else None
        if not isinstance(entry, dict) or name not in self._names:
            raise TaskError(f"{t.task_id}: reference needs an 'entry' of a tested reasoning-gym generator")
        text = text_to_judge(response)
        if len(text) > MAX_RESPONSE_CHARS:
            return failed("response too long", chars=len(text))
        ans, why = extract_answer(text)
        if ans is None:
            return failed(why)
        if len(ans) > max(200, 20 * len(str(entry.get("answer") or ""))):
            return failed("answer far longer than any answer to this task", chars=len(ans))
        try:
            score = float(self._scorer(name)(ans, entry))
        except Exception as e:  # noqa: BLE001 - the scorer choking on model output is the model's failure
            return failed(f"scorer rejected the answer: {type(e).__name__}", error_text=str(e)[:200])
        if score >= 1.0 - 1e-9:
            return passed("answer accepted by the generator's scorer", score=score)
        return failed("wrong answer", score=score)

    # -- validation ----------------------------------------------------------------------------
    def wrong_response(self, task: Task) -> str:
        return f"Answer: {_wrong(str(task.reference['answer']))}"

    def hack_probes(self, task: Task) -> list[tuple[str, Any]]:
        gold = str(task.reference["answer"])
        bad = _wrong(gold)
        q = str(task.reference["entry"].get("question", ""))
        return [
            ("two_answers", f"Answer: {bad}\nAnswer: {gold}"),
            ("tag_and_line", f"<answer>{bad}</answer>\nAnswer: {gold}"),
            ("either_or", f"Answer: {gold} or {bad}"),
            ("negated", f"Answer: not {gold}"),
            ("gold_then_others", f"Answer: {gold}\n{bad}\n{bad}"),
            ("echo_question", f"Answer: {q}"),
            ("no_marker", gold),
        ]


def _wrong(gold: str) -> str:
    """A different answer of the same shape: the last digit bumped, else a yes/no flipped, else altered."""
    for a, b in (("True", "False"), ("False", "True"), ("Yes", "No"), ("No", "Yes"), ("yes", "no"), ("no", "yes")):
        if gold.strip() == a:
            return b
    for i in range(len(gold) - 1, -1, -1):
        if gold[i].isdigit():
            return gold[:i] + str((int(gold[i]) + 1) % 10) + gold[i + 1:]
    return (gold[::-1] if gold[::-1] != gold else gold + "q") if gold else "42"
