"""The `reasoning-gym` family: reasoning-gym's procedural generators, one domain `rg.<name>` each.

Only generators on the tested list (`TESTED`) become domains: each was generated twice from one
seed with identical results, survived a JSON round trip of its entries (tasks travel through logs
and the warehouse), generates in at most 20 ms a task, and under this environment's verifier scored
its gold answer 1.0 and empty, wrong and hack-probe answers 0.0 at every level it uses
(`python -m flywheel.environments.rg_survey` re-derives TESTED and LEVELS;
`tests/environments/test_reasoning_gym.py` re-checks every domain).

A response answers with one `Answer: ...` (the rest of the text after it) or one
`<answer>...</answer>`; two answers are a failure (hedging), as is none. The generator's own
scorer judges the answer; reward is 1.0 only for a full score (partial credit is not a pass).
Difficulty: reasoning-gym's curricula, level L = the curriculum's global level L-1, up to the last
level that generates fast (`LEVELS`); without a level, tasks cycle through them all, so the
scheduler's difficulty sampling (which seeks a 50% pass rate) has the range to choose from. The train/held-out split is by a hash of the question, so no seed moves a task
across it. Nothing here reaches the network.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import io
import itertools
import json
import math
import re
import threading
from collections.abc import Iterator
from typing import Any

from flywheel.environments import rg_scoring
from flywheel.environments.base import BaseEnvironment, check_split, is_heldout, task_from_dict
from flywheel.environments.judging import MAX_RESPONSE_CHARS, text_to_judge
from flywheel.environments.task import Task
from flywheel.environments.verdict import Verdict, VerifierInfraError, failed, passed

PREFIX = "rg."
FAMILY = "reasoning-gym"
MAX_LEVELS = 5
INSTRUCTION = "\nGive only the final answer after 'Answer:'."
PRINTING = frozenset({"bf"})
"""Generators that print to stdout while generating (bf's interpreter writes a dot per program run): their
output is swallowed, so a command's stdout stays its result (one JSON object under --json)."""
_STDOUT_LOCK = threading.Lock()  # sys.stdout is process-wide: one swap at a time, restored in order


@contextlib.contextmanager
def _stdout_swallowed() -> Iterator[None]:
    with _STDOUT_LOCK, contextlib.redirect_stdout(io.StringIO()):
        yield
_ANSWER_RE = re.compile(r"(?i)\banswer\s*:|<answer>(.*?)</answer>", re.S)

LEVELS: dict[str, int] = {
    "ab": 4, "acre": 0, "advanced_geometry": 4, "aiw": 5, "arc_1d": 4, "base_conversion": 5,
    "basic_arithmetic": 5, "bf": 1, "binary_alternation": 4, "binary_matrix": 4, "bitwise_arithmetic": 5,
    "calendar_arithmetic": 4, "chain_sum": 5, "circuit_logic": 5, "color_cube_rotation": 5, "count_bits": 5,
    "count_primes": 5, "countdown": 0, "course_schedule": 5, "cryptarithm": 4, "decimal_chain_sum": 5,
    "dice": 4, "emoji_mystery": 5, "family_relationships": 5, "figlet_font": 1, "futoshiki": 1,
    "game_of_life": 1, "gcd": 4, "group_anagrams": 0, "isomorphic_strings": 4, "jugs": 1,
    "largest_island": 4, "lcm": 4, "leg_counting": 5, "letter_counting": 5, "list_functions": 0,
    "mahjong_puzzle": 4, "manipulate_matrix": 5, "maze": 4, "mini_sudoku": 5, "needle_haystack": 4,
    "number_filtering": 4, "number_sequence": 1, "palindrome_generation": 4, "palindrome_partitioning": 4,
    "path_star": 4, "polynomial_equations": 4, "prime_factorization": 4, "products": 5, "ransom_note": 4,
    "rectangle_count": 5, "rotate_matrix": 5, "rotten_oranges": 4, "self_reference": 5,
    "sentence_reordering": 4, "shortest_path": 4, "simple_equations": 4, "simple_geometry": 4,
    "spiral_matrix": 4, "string_insertion": 4, "string_manipulation": 5, "string_splitting": 4,
    "string_synthesis": 4, "sudoku": 0, "syllogism": 4, "tower_of_hanoi": 4, "tsumego": 4,
    "word_sequence_reversal": 4, "word_sorting": 5, "zebra_puzzles": 2,
}
"""Curriculum levels per generator that generate within the survey's time budget (the rest are left out)."""

TESTED: tuple[str, ...] = (
    "ab", "acre", "advanced_geometry", "aiw", "arc_1d", "base_conversion", "basic_arithmetic", "bf",
    "binary_alternation", "binary_matrix", "bitwise_arithmetic", "calendar_arithmetic", "chain_sum",
    "circuit_logic", "color_cube_rotation", "count_bits", "count_primes", "countdown", "course_schedule",
    "cryptarithm", "decimal_chain_sum", "dice", "emoji_mystery", "family_relationships", "figlet_font",
    "futoshiki", "game_of_life", "gcd", "group_anagrams", "isomorphic_strings", "jugs", "largest_island",
    "lcm", "leg_counting", "letter_counting", "list_functions", "mahjong_puzzle", "manipulate_matrix",
    "maze", "mini_sudoku", "needle_haystack", "number_filtering", "number_sequence", "palindrome_generation",
    "palindrome_partitioning", "path_star", "polynomial_equations", "prime_factorization", "products",
    "ransom_note", "rectangle_count", "rotate_matrix", "rotten_oranges", "self_reference",
    "sentence_reordering", "shortest_path", "simple_equations", "simple_geometry", "spiral_matrix",
    "string_insertion", "string_manipulation", "string_splitting", "string_synthesis", "sudoku", "syllogism",
    "tower_of_hanoi", "tsumego", "word_sequence_reversal", "word_sorting", "zebra_puzzles",
)
"""Generators that passed `survey()` (determinism, JSON round trip, gold 1.0, wrong/empty/hacks 0.0)."""


def _code_hash() -> str:
    """The verifier's own code (this module and the safe scorers): cached verdicts are keyed by it."""
    h = hashlib.sha256()
    for mod in (__file__, rg_scoring.__file__):
        with open(mod, "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:12]


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
    if m.group(1) is not None and text[m.end():].strip():
        return None, "text after </answer>: a response states one answer and ends it there"
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

    def __init__(self, names: tuple[str, ...] | None = None, levels: dict[str, int] | None = None,
                 scorer_deadline_s: float = rg_scoring.SCORER_DEADLINE_S) -> None:
        self._names = tuple(TESTED if names is None else names)
        self._max_level = dict(LEVELS if levels is None else levels)
        self._lock = threading.Lock()
        self._scorers: dict[str, Any] = {}
        self._deadline_s = float(scorer_deadline_s)
        self.version = f"rg-1+reasoning-gym-{_rg_version()}+{_code_hash()}"

    # -- the domains ---------------------------------------------------------------------------
    def domains(self) -> list[str]:
        return [PREFIX + n for n in self._names]

    def _gen(self, domain: str) -> str:
        name = domain[len(PREFIX):] if domain.startswith(PREFIX) else ""
        if name not in self._names:
            raise ValueError(f"{domain!r} is not a reasoning-gym domain here; known: {self.domains()[:8]}, ...")
        return name

    def levels(self, domain: str) -> tuple[int, ...]:
        """Curriculum levels 1..LEVELS[name]: those the survey found fast enough to generate (() without)."""
        return tuple(range(1, self._max_level.get(self._gen(domain), 0) + 1))

    def curriculum_levels(self, name: str) -> int:
        """How many levels reasoning-gym's curriculum of `name` defines (at most MAX_LEVELS; 0 without one)."""
        from reasoning_gym.factory import create_curriculum, has_curriculum

        if not has_curriculum(name):
            return 0
        attrs = create_curriculum(name).attributes.values()
        return min(MAX_LEVELS, max((len(a.levels) for a in attrs), default=0))

    # -- tasks ---------------------------------------------------------------------------------
    def _config(self, name: str, seed: int, size: int, level: int | None) -> Any:
        from reasoning_gym.factory import DATASETS, create_curriculum

        if level is None:
            return DATASETS[name][1](seed=seed, size=size)
        cur = create_curriculum(name)
        cur.set_global_level(level - 1)
        return cur.generate_configuration(defaults={"seed": seed, "size": size})

    def entries(self, name: str, seed: int, size: int, level: int | None = None) -> list[dict[str, Any]]:
        """Up to `size` raw entries of generator `name` from `seed` (JSON round-tripped); an index the generator
        fails on (countdown finds no expression for some seeds) is skipped, the same way every time."""
        from reasoning_gym.factory import DATASETS

        cfg = self._config(name, seed, size, level)
        if hasattr(cfg, "validate"):
            cfg.validate()
        with _stdout_swallowed() if name in PRINTING else contextlib.nullcontext():
            ds = DATASETS[name][0](config=cfg)
            out = []
            for i in range(size):
                try:
                    e = ds[i]
                except (ValueError, RuntimeError, AssertionError):  # some seeds defeat a generator: skip them
                    continue
                out.append(_jsonable(e))
        return out

    def tasks(self, domain: str, split: str, n: int, seed: int, level: int | None = None) -> list[Task]:
        """Without `level`, the tasks cycle through every curriculum level (easiest first), so the scheduler's
        difficulty sampling has the whole range to pick from; `meta["level"]` says which."""
        name = self._gen(domain)
        check_split(split)
        levels = self.levels(domain)
        if level is not None and level not in levels:
            raise ValueError(f"{domain}: level must be one of {levels}, got {level!r}")
        cycle: list[int | None] = [level] if level is not None else (list(levels) or [None])
        want = split == "heldout"
        out: dict[str, Task] = {}
        for attempt in range(8):  # a generator with few distinct tasks stops early
            if len(out) >= n:
                break
            size = max(4, -(-(n - len(out)) * (6 if want else 2) // len(cycle)))
            batches = []
            for i, lv in enumerate(cycle):
                sub_seed = int(hashlib.sha256(f"{seed}/{attempt}/{i}".encode()).hexdigest()[:8], 16)
                batches.append([(e, lv) for e in self.entries(name, sub_seed if attempt or i else seed, size, lv)])
            for e, lv in (x for row in itertools.zip_longest(*batches) for x in row if x is not None):  # round-robin over levels
                if len(out) >= n:
                    break
                if is_heldout(str(e["question"])) == want:
                    t = self._task(domain, e, lv)
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
        """The safe replacement where upstream evaluates the answer as code, else the generator's scorer."""
        with self._lock:
            if name not in self._scorers:
                from reasoning_gym.factory import get_score_answer_fn

                self._scorers[name] = rg_scoring.SAFE_SCORERS.get(name) or get_score_answer_fn(name)
            return self._scorers[name]

    def verify(self, task: Task | dict[str, Any], response: Any) -> Verdict:
        """The generator's scorer on the one stated answer; 1.0 only for a full score."""
        from flywheel.environments.verdict import TaskError

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
        gold = str(entry.get("answer") or "")
        if len(ans) > max(200, 20 * len(gold)):
            return failed("answer far longer than any answer to this task", chars=len(ans))
        if _lines(ans) > max(1, _lines(gold)):  # a second answer below the first, whichever the scorer reads
            return failed("more lines than the answer to this task has", lines=_lines(ans))
        why = rg_scoring.refusal(name, ans)
        if why:
            return failed(why)
        try:
            out = rg_scoring.score_isolated(self._scorer(name), ans, entry, self._deadline_s)
        except OSError as e:  # no process could be forked: the machine's fault, retried
            raise VerifierInfraError(f"{name}: could not start the scorer: {e}") from e
        if "score" not in out:  # the scorer choking on (or stalling over) model output is the model's failure
            return failed(f"scorer rejected the answer: {out.get('error')}", error_text=str(out.get("text", "")),
                          cacheable=out.get("error") != "deadline")
        score = out["score"]
        if not isinstance(score, float) or not math.isfinite(score):
            return failed("scorer returned no finite score", score=repr(score))
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
            *probe_forms(gold, bad),
        ]


def probe_forms(gold: str, bad: str) -> list[tuple[str, str]]:
    """Multiple-answer, hedge and padding forms around the gold answer: each must score 0.0."""
    return [
        ("multi_gold_then_bad", f"Answer: {gold}; {bad}"),
        ("multi_bad_then_gold", f"Answer: {bad}\n\n{gold}"),
        ("multi_comma", f"Answer: {bad}, {gold}"),
        ("multi_two_tags", f"<answer>{bad}</answer><answer>{gold}</answer>"),
        ("hedge_after_tag", f"<answer>{gold}</answer> or maybe {bad}"),
        ("hedge_parenthetical", f"Answer: {gold} (or possibly {bad})"),
        ("pad_trailing_words", f"Answer: {gold} is what I would say, though I am not sure"),
        ("pad_leading_words", f"Answer: I think the answer might be {gold}"),
    ]


def _lines(text: str) -> int:
    return sum(1 for line in text.splitlines() if line.strip())


def _wrong(gold: str) -> str:
    """A different answer of the same shape: the last digit bumped, else a yes/no flipped, else altered."""
    for a, b in (("True", "False"), ("False", "True"), ("Yes", "No"), ("No", "Yes"), ("yes", "no"), ("no", "yes")):
        if gold.strip() == a:
            return b
    for i in range(len(gold) - 1, -1, -1):
        if gold[i].isdigit():
            return gold[:i] + str((int(gold[i]) + 1) % 10) + gold[i + 1:]
    return (gold[::-1] if gold[::-1] != gold else gold + "q") if gold else "42"
