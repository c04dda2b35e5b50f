"""Mining knobs in one frozen dataclass, declared once (the Dagster config of `failure_cases` and `task_pool`
is generated from it)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from flywheel.config_fields import check_choices, option


@dataclass(frozen=True)
class MiningConfig:
    """What failure mining and the task pool do; every field says why it exists."""

    model: str = option("", "restrict mining to one model (name:version as logged); empty = every model that "
                            "served the most recent log day (the pool's tasks are pooled over them)")
    min_attempts: int = option(3, "attempts a task needs before its pass rate counts as 'sometimes solves, "
                                  "sometimes fails'", ge=1)
    prior_strength: float = option(4.0, "pseudo-attempts of the Beta prior behind the difficulty estimate; the "
                                        "prior mean is the task's fail rate under earlier models "
                                        "(difficulty_history) or else the domain's fail rate", ge=0)
    near_dup_threshold: float = option(0.8, "Jaccard similarity of prompt word-shingles at or above which two "
                                            "tasks are near-duplicates", gt=0, le=1)
    near_dup_ngram: int = option(3, "words per shingle for near-duplicate detection", ge=1)
    minhash_perms: int = option(32, "MinHash permutations for near-duplicate candidate search (candidates are "
                                    "then checked exactly)", ge=1)
    lsh_bands: int = option(8, "LSH bands; minhash_perms / lsh_bands rows per band. More bands find lower "
                               "similarities", ge=1)
    decontam_ngram: int = option(6, "words per n-gram when comparing prompts with the held-out evaluation sets",
                                 ge=1)
    decontam_threshold: float = option(0.8, "share of a prompt's n-grams found in one held-out prompt at or above "
                                            "which the task is dropped", gt=0, le=1)
    max_pool_per_domain: int = option(2000, "task_pool rows kept per domain", ge=1)
    domains: tuple[str, ...] = option((), "domains mined into the pool; empty = every domain in the logs")
    selection: str = option("failures", "which logged tasks make the pool: failures (the flywheel: tasks the "
                                        "model failed, ranked by how uncertain their outcome is) | uniform (a "
                                        "control: every logged task a verifier can be built for, solved ones "
                                        "too, in the order of a hash of the task id; the same budget then spent "
                                        "on traffic that mining did not choose, benchmarks/bench_ablation.py)",
                            choices=("failures", "uniform"))

    def __post_init__(self) -> None:
        # configs stored by earlier versions (task_pool_runs) said None for "every"/"the latest"
        object.__setattr__(self, "model", self.model or "")
        object.__setattr__(self, "domains", tuple(self.domains or ()))
        check_choices(self)
        if self.minhash_perms % self.lsh_bands:
            raise ValueError(f"lsh_bands ({self.lsh_bands}) must divide minhash_perms ({self.minhash_perms})")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["domains"] = list(self.domains)
        return d
