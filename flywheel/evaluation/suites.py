"""What an evaluation runs: its frozen config and the decontaminated held-out task sets.

The held-out split is fixed by a hash of each prompt (`flywheel.tasks.suites`), so
training can never draw an eval prompt; `contamination()` still checks the actual
training pool of a turn, because mined production logs may contain anything.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

from flywheel.config_fields import check_choices, option
from flywheel.defaults import SERVING_TEMPERATURE
from flywheel.tasks.base import Task
from flywheel.tasks.suites import DOMAINS, HELDOUT_SIZE, heldout_suite
from flywheel.tasks.world_suites import SUITES, suite_tasks, unit_name


@dataclass(frozen=True)
class EvalConfig:
    """How one evaluation runs. The defaults are what a turn uses: each built-in domain's held-out set
    (`HELDOUT_SIZE`) x 8 samples at the serving temperature plus one greedy sample per task, candidate and
    champion both: the sizes
    `benchmarks/bench_gate.py` needs for the gate to catch a +5-point gain 80% of the time. The
    `flywheel evaluate` flags and the `eval_report` Dagster config are generated from these fields."""

    n_samples: int = option(8, "samples per task at `temperature`; pass@k for every k <= n_samples", ge=1)
    temperature: float = option(SERVING_TEMPERATURE, "sampling temperature of the pass@k samples (default: what "
                                                     "production serves)", ge=0)
    greedy: bool = option(True, "also score one greedy (temperature 0) sample per task: greedy pass@1")
    max_new_tokens: int = option(160, "token budget per response (agents: all steps, tool results included)", ge=1)
    max_steps: int = option(6, "tool calls an agent task may take before it is cut off", ge=0)
    seed: int = option(0, "sampling and bootstrap seed, used as given when derive_seed is off", ge=0)
    derive_seed: bool = option(True, "derive the seed from what is evaluated (a turn: the base model and the "
                                     "log partitions the candidate was trained on; `flywheel evaluate`: the "
                                     "checkpoints): fresh for new inputs, shared by both models, equal for "
                                     "equal inputs; off: use `seed`")
    tasks_per_domain: Mapping[str, int] = option(dict(HELDOUT_SIZE),
                                                 "held-out tasks per domain (0 or absent: domain not evaluated); "
                                                 "default: each built-in environment's heldout_size", ge=0)
    domain_tasks: Mapping[str, int] = option({}, "held-out tasks per domain of the installed environments, merged "
                                                 "into tasks_per_domain: a domain, a glob (rg.*) or family:NAME, "
                                                 "e.g. {\"rg.*\": 20} (each matched domain gets 20)", ge=0)
    suites: tuple[str, ...] = option(("heldout", "production"),
                                     "evaluation suites: heldout (the SFT distribution's held-out split, the "
                                     "regression guard), production (held-out draws from what production asks, "
                                     "drift included: where a gain must show), test (the frozen test suite: "
                                     "reported, never read by the gate; `flywheel evaluate --suite test`)",
                                     choices=SUITES)
    production_tasks: int = option(150, "tasks per domain of the production suite (at most the domain's "
                                        "tasks_per_domain)", ge=0)
    production_domain_tasks: Mapping[str, int] = option({}, "production-suite tasks of these domains, not capped "
                                                            "by their held-out size: {\"agent\": 200} reads agent "
                                                            "on 200 production tasks while its in-distribution "
                                                            "held-out stays at 60 (each an evaluated domain)", ge=0)
    test_tasks: int = option(100, "tasks per domain of the test suite (at most the domain's tasks_per_domain)",
                             ge=0)
    price_per_1k_prompt_tokens: float = option(0.0005, "USD per 1000 prompt tokens", ge=0)
    price_per_1k_completion_tokens: float = option(0.0015, "USD per 1000 completion tokens", ge=0)
    n_boot: int = option(1000, "bootstrap resamples per interval", ge=1)
    alpha: float = option(0.05, "1 - confidence level of every interval", gt=0, le=1)

    def __post_init__(self) -> None:
        object.__setattr__(self, "suites", tuple(self.suites))  # a report's JSON gives a list
        check_choices(self)  # ranges, finiteness
        if not self.suites or len(set(self.suites)) != len(self.suites):
            raise ValueError(f"EvalConfig.suites must name one or more of {SUITES} once each, got {self.suites!r}")
        unknown = set(self.tasks_per_domain) - set(DOMAINS)
        if unknown:  # beyond math/code/agent: a domain of an installed environment
            from flywheel.environments.registry import default_environments

            unknown -= set(default_environments().domains())
        if unknown:
            raise ValueError(f"unknown domains {sorted(unknown)}; known: {DOMAINS} and the domains of "
                             f"`flywheel envs list`")
        tasks = dict(self.tasks_per_domain)
        if self.domain_tasks:
            from flywheel.environments.mix import expand_counts

            extra = expand_counts(self.domain_tasks)
            tasks.update({d: n for d, n in extra.items() if d not in tasks})
        object.__setattr__(self, "tasks_per_domain", MappingProxyType(tasks))
        object.__setattr__(self, "domain_tasks", MappingProxyType(dict(self.domain_tasks)))
        idle = sorted(d for d in self.production_domain_tasks if not tasks.get(d))
        if idle:
            raise ValueError(f"EvalConfig.production_domain_tasks names {idle}, not evaluated (tasks_per_domain "
                             f"holds {sorted(d for d, n in tasks.items() if n)})")
        object.__setattr__(self, "production_domain_tasks", MappingProxyType(dict(self.production_domain_tasks)))

    def seeded_from(self, subject: str, inputs: Sequence[str]) -> EvalConfig:
        """This config with the seed `derived_seed(subject, inputs)` when `derive_seed` is on, else unchanged.
        A turn passes its base model and the log partitions the candidate was trained on."""
        return replace(self, seed=derived_seed(subject, inputs)) if self.derive_seed else self

    def seed_note(self, source: str) -> str:
        """Where this config's seed came from, in words for the report (`source`: what it was derived from)."""
        return f"seed {self.seed}, derived from {source}" if self.derive_seed else f"seed {self.seed}, set in the config"

    @property
    def domains(self) -> tuple[str, ...]:
        """The evaluated domains: the built-in ones first, then environments' domains in config order."""
        rest = [d for d in self.tasks_per_domain if d not in DOMAINS]
        return tuple(d for d in (*DOMAINS, *rest) if self.tasks_per_domain.get(d, 0) > 0)

    def cost_usd(self, prompt_tokens: float, completion_tokens: float) -> float:
        return (prompt_tokens * self.price_per_1k_prompt_tokens + completion_tokens * self.price_per_1k_completion_tokens) / 1000

    def to_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["tasks_per_domain"] = dict(self.tasks_per_domain)
        d["domain_tasks"] = dict(self.domain_tasks)
        d["production_domain_tasks"] = dict(self.production_domain_tasks)
        return d

    def to_params(self) -> dict[str, Any]:
        """Flat MLflow params."""
        d = self.to_dict()
        tpd = d.pop("tasks_per_domain")
        d["domain_tasks"] = json.dumps(d["domain_tasks"], sort_keys=True)
        d["production_domain_tasks"] = json.dumps(d["production_domain_tasks"], sort_keys=True)
        d.update({f"eval_tasks_{k}": v for k, v in tpd.items()})
        return {k if k.startswith("eval_") else f"eval_{k}": v for k, v in d.items()}


def derived_seed(subject: str, inputs: Sequence[str]) -> int:
    """A seed fresh for new inputs (a turn trains on new log partitions) yet equal for equal ones (in any
    order), so candidate and champion share it and a re-run of the same turn reproduces its evaluation."""
    blob = json.dumps({"subject": subject, "inputs": sorted(inputs)})
    return int.from_bytes(hashlib.sha256(blob.encode()).digest()[:4], "big") >> 1


def eval_tasks(config: EvalConfig) -> dict[str, list[Task]]:
    """Each suite's first tasks of each domain (deterministic, independent of seed), keyed by report unit
    (`math`, `production/math`, `test/math`): `tasks_per_domain[d]` per domain (at most `production_tasks`
    and `test_tasks` in those suites; `production_domain_tasks[d]` in the production suite where given);
    an environment's domain generates only as many as asked, and a suite a domain lacks is left out."""
    out: dict[str, list[Task]] = {}
    for suite in (s for s in SUITES if s in config.suites):
        for d in config.domains:
            cap = {"production": config.production_tasks, "test": config.test_tasks}.get(suite)
            n = config.tasks_per_domain[d] if cap is None else min(cap, config.tasks_per_domain[d])
            if suite == "production":
                n = config.production_domain_tasks.get(d, n)
            if suite == "heldout":
                ts = heldout_suite(d, None if d in DOMAINS else n)[:n]
            else:
                ts = suite_tasks(suite, d, n) if n else []
            if ts:
                out[unit_name(suite, d)] = ts
    return out


_WS = re.compile(r"\s+")


def normalize_prompt(prompt: str) -> str:
    return _WS.sub(" ", prompt.strip().lower())


def _ngrams(text: str, n: int) -> set[tuple[str, ...]]:
    toks = normalize_prompt(text).split(" ")
    return {tuple(toks[i : i + n]) for i in range(max(0, len(toks) - n + 1))}


@dataclass(frozen=True)
class ContaminationReport:
    """Eval prompts that also occur in the training pool: exactly (after normalising) or by long n-gram overlap."""

    n_eval: int
    n_train: int
    exact: tuple[str, ...]
    near: tuple[str, ...]
    ngram: int

    @property
    def clean(self) -> bool:
        return not self.exact

    def to_dict(self) -> dict[str, Any]:
        return {
            "n_eval": self.n_eval,
            "n_train": self.n_train,
            "exact_overlap": len(self.exact),
            "near_overlap": len(self.near),
            "overlapping_task_ids": list(self.exact)[:20],
            "ngram": self.ngram,
            "clean": self.clean,
        }


def contamination(
    eval_set: Mapping[str, Iterable[Task]] | Iterable[Task],
    train_prompts: Iterable[str],
    ngram: int = 13,
    near_threshold: float = 0.5,
) -> ContaminationReport:
    """Which eval tasks the training prompts contain; `near` = share of a task's `ngram`-grams seen in training."""
    tasks = [t for ts in eval_set.values() for t in ts] if isinstance(eval_set, Mapping) else list(eval_set)
    tasks = list({t.task_id: t for t in tasks}.values())  # a task in two suites is one eval prompt
    train = [p for p in train_prompts if p]
    train_norm = {normalize_prompt(p) for p in train}
    train_grams: set[tuple[str, ...]] = set()
    for p in train:
        train_grams |= _ngrams(p, ngram)
    exact, near = [], []
    for t in tasks:
        if normalize_prompt(t.prompt) in train_norm:
            exact.append(t.task_id)
            continue
        grams = _ngrams(t.prompt, ngram)
        if grams and len(grams & train_grams) / len(grams) >= near_threshold:
            near.append(t.task_id)
    return ContaminationReport(len(tasks), len(train), tuple(exact), tuple(near), ngram)
