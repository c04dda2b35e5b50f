"""RFT's dataset: candidate responses for the run's tasks, judged by the verifiers, deduplicated, capped.

Candidates come from the logs (responses production logged as successes for these tasks,
re-verified here: a log's outcome only preselects) and from the policy (samples through the
torch rollout engine, agent tasks with their tools). Every candidate is scored by the same
`score_fn` the RL run uses; only passing ones whose sample ended by itself (not cut off by the
token budget) are kept. Identical responses to one task count once, and each task keeps at
most `max_examples_per_task` (a seeded choice), so the tasks the policy already solves do not
drown the rest. `RftCounts` says how many candidates each step let through.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from flywheel.environments.targets import sft_target
from flywheel.mining.taxonomy import SQL_PASSED
from flywheel.rollout import generate_for_tasks
from flywheel.rollout.types import SamplingParams
from flywheel.tasks.base import Task
from flywheel.tasks.sources import REPLAY, source_of
from flywheel.train.common.rollouts import ScoreFn
from flywheel.train.rft.config import RftConfig
from flywheel.train.rft.curves import sampling_curve
from flywheel.train.rft.variants import is_pool, is_variant, mined_budget, with_variants
from flywheel.verifiers.verdict import Verdict, VerifierInfraError
from flywheel.warehouse import connect
from flywheel.world.responder import text_from_messages

Progress = Callable[[str, int, int], None]
"""`progress(phase, done, total)`: phase is "logs", "sample" or "verify"."""

SAMPLE_CHUNK = 32
"""Tasks per engine call: bounds memory of one generation and paces `progress`."""


@dataclass(frozen=True)
class RftExample:
    """One training example: a response the verifiers passed for `task_id`, and where it came from."""

    task_id: str
    domain: str
    prompt: str
    response: str
    source: str  # "logs" | "policy"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class RftCounts:
    """How many candidates each step let through (per domain in `by_domain`)."""

    tasks: int = 0
    log_candidates: int = 0  # distinct logged responses claimed successful, re-verified
    log_passed: int = 0
    sampled: int = 0  # policy samples drawn
    verified: int = 0  # candidates the verifiers judged (logs + samples)
    passed: int = 0
    truncated: int = 0  # passed, but cut off by the token budget: not a clean demonstration
    duplicates: int = 0  # identical (task, response) pairs beyond the first
    capped: int = 0  # distinct passing responses beyond max_examples_per_task
    examples: int = 0
    tasks_with_examples: int = 0
    by_domain: dict[str, dict[str, int]] = field(default_factory=dict)
    # task_id -> (domain, policy samples, passing ones): written back to difficulty_history, not logged
    task_counts: dict[str, tuple[str, int, int]] = field(default_factory=dict)
    # the counts and shares as candidates were judged (`flywheel.train.rft.curves`): the run's curves, not totals
    curve: list[dict[str, float]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("task_counts")
        d.pop("curve")
        return d

    def _attempt(self, task: Task, passed: bool) -> None:
        domain, attempts, passes = self.task_counts.get(task.task_id, (task.domain, 0, 0))
        self.task_counts[task.task_id] = (domain, attempts + 1, passes + int(passed))

    def _bump(self, domain: str, key: str, n: int = 1) -> None:
        setattr(self, key, getattr(self, key) + n)
        d = self.by_domain.setdefault(domain, {})
        d[key] = d.get(key, 0) + n


@dataclass
class Candidate:
    """A response considered for the dataset, with its verdict once judged."""

    task: Task
    response: str
    source: str
    truncated: bool = False
    verdict: Verdict | None = None


def choose_tasks(tasks: Sequence[Task], per_domain: dict[str, int], seed: int, pool_first: bool = False,
                 replay_share: float = 0.0) -> list[Task]:
    """At most `per_domain[d]` tasks of each domain (seeded), in the order `tasks` lists them; with
    `pool_first`, mined pool tasks (`meta["source"] == "pool"`) before any replay task, up to
    `mined_budget(n, replay_share)` of them; pool tasks past that budget come back only where replay is short."""
    chosen: set[str] = set()
    for domain, n in per_domain.items():
        rng = random.Random(f"rft:{seed}:{domain}")
        ids = [t.task_id for t in tasks if t.domain == domain]
        if pool_first:
            mined = [t.task_id for t in tasks if t.domain == domain and is_pool(t)]
            take = rng.sample(mined, min(mined_budget(n, replay_share), len(mined)))
            mined_ids, taken = set(mined), set(take)
            replay = [i for i in ids if i not in mined_ids]
            take += rng.sample(replay, min(n - len(take), len(replay)))
            left = [i for i in mined if i not in taken]  # more pool only where replay is short
            take += rng.sample(left, min(n - len(take), len(left)))
            chosen.update(take)
        else:
            chosen.update(rng.sample(ids, min(n, len(ids))))
    return [t for t in tasks if t.task_id in chosen]


def logged_successes(warehouse: str | Path, task_ids: Sequence[str], per_task: int, seed: int) -> dict[str, list[str]]:
    """Distinct logged responses (training text format) that the log claims passed, per task id.

    At most `per_task` per task, a seeded choice among them; a warehouse without `task_logs`
    (a fresh machine) gives none.
    """
    if per_task <= 0 or not task_ids or not Path(warehouse).exists():
        return {}
    con = connect(warehouse, read_only=True)
    try:
        names = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
        if "task_logs" not in names:
            return {}
        con.register("_rft_ids", pa.table({"task_id": pa.array(list(task_ids), pa.string())}))
        rows = con.execute(f"""
            SELECT DISTINCT task_id, messages FROM task_logs
            WHERE task_id IN (SELECT task_id FROM _rft_ids) AND coalesce({SQL_PASSED.format(o='outcome')}, false)
        """).fetchall()
    finally:
        con.close()
    texts: dict[str, set[str]] = {}
    for task_id, messages in rows:
        try:
            msgs = json.loads(messages)
            text = text_from_messages(msgs) if isinstance(msgs, list) else ""
        except (json.JSONDecodeError, TypeError, AttributeError):
            continue  # a malformed logged conversation is no demonstration
        if text:
            texts.setdefault(task_id, set()).add(text)
    out = {}
    for task_id, found in texts.items():
        ordered = sorted(found)
        out[task_id] = random.Random(f"rft-logs:{seed}:{task_id}").sample(ordered, min(per_task, len(ordered)))
    return out


def samples_for(task: Task, config: RftConfig) -> int:
    """Policy samples drawn for `task`: `pool_samples_per_task` for a mined pool task or one of its variants
    where set, else `samples_per_task`."""
    if config.pool_samples_per_task and (is_pool(task) or is_variant(task)):
        return config.pool_samples_per_task
    return config.samples_per_task


def sample_candidates(model: Any, tokenizer: Any, tasks: Sequence[Task], config: RftConfig, device: str,
                      progress: Progress | None = None, engine: Any = None) -> list[Candidate]:
    """`samples_for(task)` policy samples per task (agent tasks run their tools), drawn by `engine`
    (a `RolloutEngine` over the same checkpoint, e.g. vLLM's; default the torch engine over `model`)."""
    from flywheel.rollout.torch_engine import TorchEngine  # heavy (torch): only sampling needs it

    if config.samples_per_task == 0 or not tasks:
        return []
    engine = engine or TorchEngine(model, tokenizer, device=device)
    groups: dict[tuple[str, int], list[Task]] = {}
    for t in tasks:  # one domain per engine call: single-turn tasks never wait on tool rounds
        groups.setdefault((t.domain, samples_for(t, config)), []).append(t)
    chunks = [(n, ts[i: i + SAMPLE_CHUNK]) for (_, n), ts in groups.items() for i in range(0, len(ts), SAMPLE_CHUNK)]
    out: list[Candidate] = []
    for k, (n, chunk) in enumerate(chunks):
        sp = SamplingParams(temperature=config.temperature, max_new_tokens=config.max_new_tokens,
                            seed=config.seed * 100_003 + k)
        for r in generate_for_tasks(engine, chunk, n, sp, max_steps=config.max_tool_steps):
            out.append(Candidate(chunk[r.group_id], r.text, "policy", truncated=r.finish_reason == "length"))
        if progress:
            progress("sample", k + 1, len(chunks))
    return out


def verify(candidates: list[Candidate], score_fn: ScoreFn, progress: Progress | None = None) -> None:
    """Attach the verifiers' verdict to every candidate (a judge failure raises, never a pass)."""
    many = getattr(score_fn, "many", None)
    step = 256
    for lo in range(0, len(candidates), step):
        part = candidates[lo: lo + step]
        items = [(c.task.domain, c.task.verifier_task(), c.response) for c in part]
        verdicts = many(items) if many else [score_fn(*it) for it in items]
        if len(verdicts) != len(items):
            raise VerifierInfraError(f"{len(items) - len(verdicts)} RFT candidates got no verdict")
        for c, v in zip(part, verdicts, strict=True):
            c.verdict = v
        if progress:
            progress("verify", min(lo + step, len(candidates)), len(candidates))


def select_examples(candidates: Sequence[Candidate], max_per_task: int, seed: int,
                    counts: RftCounts) -> list[RftExample]:
    """Passing, complete, distinct responses, at most `max_per_task` per task (seeded), in task order."""
    kept: dict[str, list[Candidate]] = {}
    seen: set[tuple[str, str]] = set()
    for c in candidates:
        if c.verdict is None or not c.verdict.passed:
            continue
        counts._bump(c.task.domain, "passed")
        if c.truncated:
            counts._bump(c.task.domain, "truncated")
            continue
        key = (c.task.task_id, c.response)
        if key in seen:
            counts._bump(c.task.domain, "duplicates")
            continue
        seen.add(key)
        kept.setdefault(c.task.task_id, []).append(c)
    out: list[RftExample] = []
    for task_id, cs in kept.items():
        if len(cs) > max_per_task:
            counts._bump(cs[0].task.domain, "capped", len(cs) - max_per_task)
            idx = sorted(random.Random(f"rft-cap:{seed}:{task_id}").sample(range(len(cs)), max_per_task))
            cs = [cs[i] for i in idx]
        counts._bump(cs[0].task.domain, "tasks_with_examples")
        for c in cs:
            counts._bump(c.task.domain, "examples")
            out.append(RftExample(task_id, c.task.domain, c.task.prompt, c.response, c.source))
    return out


def references(tasks: Sequence[Task], formats: dict[str, str]) -> list[Candidate]:
    """The gold solution of each task that has one, as the base was taught to write it: unjudged candidates."""
    return [Candidate(t, sft_target(t, formats), "reference") for t in tasks if t.solution]


def replay_anchors(chosen: Sequence[Task], judged: Sequence[Candidate], which: str,
                   formats: dict[str, str]) -> list[Candidate]:
    """Reference candidates for the replay tasks `which` names ("all", "failed": no judged policy sample
    passed, "none"), unjudged: the gold of the base's own distribution, kept beside the policy's samples."""
    if which == "none":
        return []
    solved = {c.task.task_id for c in judged if c.source == "policy" and c.verdict is not None and c.verdict.passed}
    return references([t for t in chosen if source_of(t) == REPLAY and (which == "all" or t.task_id not in solved)],
                      formats)


def collect_examples(config: RftConfig, model: Any, tokenizer: Any, tasks: Sequence[Task], score_fn: ScoreFn, *,
                     warehouse: str | Path | None = None, device: str = "cpu",
                     progress: Progress | None = None, engine: Any = None,
                     formats: dict[str, str] | None = None) -> tuple[list[RftExample], RftCounts]:
    """The RFT dataset for `tasks` and how it was filtered (see module doc); `formats`: the base's SFT
    formats, for `reference_solutions` and `replay_references`."""
    counts = RftCounts()
    chosen = choose_tasks(tasks, config.tasks_per_domain, config.seed, config.pool_first, config.replay_share)
    if config.variants_per_task:
        chosen = with_variants(chosen, config.tasks_per_domain, config.variants_per_task, config.seed,
                               config.replay_share)
    for t in chosen:
        counts._bump(t.domain, "tasks")
    candidates: list[Candidate] = []
    if warehouse is not None:
        logged = logged_successes(warehouse, [t.task_id for t in chosen], config.log_candidates_per_task,
                                  config.seed)
        for t in chosen:
            for text in logged.get(t.task_id, ()):
                candidates.append(Candidate(t, text, "logs"))
                counts._bump(t.domain, "log_candidates")
        if progress:
            progress("logs", 1, 1)
    policy = sample_candidates(model, tokenizer, chosen, config, device, progress, engine)
    for c in policy:
        counts._bump(c.task.domain, "sampled")
    candidates += policy
    if config.reference_solutions:  # verified like any candidate: a wrong reference is never trained on
        candidates += references([t for t in chosen if is_variant(t)], formats or {})
    verify(candidates, score_fn, progress)
    anchors = replay_anchors(chosen, candidates, config.replay_references, formats or {})
    verify(anchors, score_fn)
    candidates += anchors
    for c in candidates:
        counts._bump(c.task.domain, "verified")
        passed = c.verdict is not None and c.verdict.passed
        if c.source == "logs" and passed:
            counts._bump(c.task.domain, "log_passed")
        elif c.source == "policy":
            counts._attempt(c.task, passed)
    counts.curve = sampling_curve(candidates, config.max_examples_per_task)
    return select_examples(candidates, config.max_examples_per_task, config.seed, counts), counts
