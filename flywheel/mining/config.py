"""Mining knobs in one frozen dataclass (the Dagster `MiningRunConfig` converts to it)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class MiningConfig:
    """What failure mining and the task pool do; every field says why it exists."""

    model: str | None = field(default=None, metadata={
        "help": "model whose frontier the task pool is (name:version as logged); None = the model of the "
                "most recent log record"})
    min_attempts: int = field(default=3, metadata={
        "help": "attempts a task needs before its pass rate counts as 'sometimes solves, sometimes fails'"})
    prior_strength: float = field(default=4.0, metadata={
        "help": "pseudo-attempts of the Beta prior behind the difficulty estimate; the prior mean is the "
                "task's fail rate under earlier models (difficulty_history) or else the domain's fail rate"})
    near_dup_threshold: float = field(default=0.8, metadata={
        "help": "Jaccard similarity of prompt word-shingles at or above which two tasks are near-duplicates"})
    near_dup_ngram: int = field(default=3, metadata={"help": "words per shingle for near-duplicate detection"})
    minhash_perms: int = field(default=32, metadata={
        "help": "MinHash permutations for near-duplicate candidate search (candidates are then checked exactly)"})
    lsh_bands: int = field(default=8, metadata={
        "help": "LSH bands; minhash_perms / lsh_bands rows per band. More bands find lower similarities"})
    decontam_ngram: int = field(default=6, metadata={
        "help": "words per n-gram when comparing prompts with the held-out evaluation sets"})
    decontam_threshold: float = field(default=0.8, metadata={
        "help": "share of a prompt's n-grams found in one held-out prompt at or above which the task is dropped"})
    max_pool_per_domain: int = field(default=2000, metadata={"help": "task_pool rows kept per domain"})
    domains: tuple[str, ...] | None = field(default=None, metadata={
        "help": "domains mined into the pool; None = every domain in the logs"})

    def __post_init__(self) -> None:
        for name in ("near_dup_threshold", "decontam_threshold"):
            v = getattr(self, name)
            if not 0.0 < v <= 1.0:
                raise ValueError(f"{name} must be in (0, 1], got {v}")
        if self.min_attempts < 1 or self.near_dup_ngram < 1 or self.decontam_ngram < 1:
            raise ValueError("min_attempts, near_dup_ngram and decontam_ngram must be >= 1")
        if self.minhash_perms < 1 or self.lsh_bands < 1 or self.minhash_perms % self.lsh_bands:
            raise ValueError(f"lsh_bands ({self.lsh_bands}) must divide minhash_perms ({self.minhash_perms})")
        if self.prior_strength < 0 or self.max_pool_per_domain < 1:
            raise ValueError("prior_strength must be >= 0 and max_pool_per_domain >= 1")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["domains"] = list(self.domains) if self.domains is not None else None
        return d
