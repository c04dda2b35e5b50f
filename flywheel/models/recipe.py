"""The tiny model's recipe: every knob that determines a build, and the named releases.

A recipe is a frozen dataclass whose content hash keys the build cache, so changing any
field (width, data mix, SFT schedule, build-time measurement) rebuilds the model.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from flywheel.environments.code import CodeEnvironment
from flywheel.train.common.sft import SftConfig

AGENT_FORMATS = ("direct", "plan")


@dataclass(frozen=True)
class TinyModelRecipe:
    """Everything that determines the tiny model; its hash keys the build cache."""

    release: str = field(default="tiny-v1", metadata={"help": "release name (the base_model partition); the field "
                                                            "defaults are tiny-v1's recipe"})
    seed: int = field(default=0, metadata={"help": "seed for init, data and SFT order"})
    vocab_size: int = field(default=1024, metadata={"help": "BPE vocabulary cap (the corpus may yield fewer)"})
    hidden_size: int = field(default=96, metadata={"help": "model width"})
    n_layers: int = field(default=3, metadata={"help": "transformer blocks"})
    n_heads: int = field(default=3, metadata={
        "help": "attention heads (head_dim = hidden_size / n_heads = 32: vLLM's CPU attention needs 32, 64, 80, ...)"})
    intermediate_size: int = field(default=256, metadata={"help": "MLP width"})
    max_position: int = field(default=512, metadata={"help": "max sequence length (RoPE)"})
    n_math: int = field(default=3000, metadata={"help": "math train tasks in the SFT mix"})
    n_code: int = field(default=400, metadata={"help": "code train tasks in the SFT mix"})
    n_agent: int = field(default=1000, metadata={"help": "agent train tasks in the SFT mix"})
    math_noise: float = field(default=0.3, metadata={"help": "share of math SFT targets whose final answer is "
                                                              "replaced by a wrong one after correct work: an "
                                                              "experiment knob (label noise for RL to repair); "
                                                              "tiny-v2 has none"})
    math_format: str = field(default="scratchpad", metadata={"help": "math SFT targets: scratchpad (digit by digit) | gold"})
    agent_format: str = field(default="direct", metadata={
        "help": "agent SFT targets: direct (the calls alone) | plan (a worked plan before each call: each goal "
                "item's counts and their difference digit by digit, flywheel.environments.agent.plan)"})
    code_levels: tuple[int, ...] = field(default=(1,), metadata={
        "help": "code SFT levels whose train tasks join the mix, n_code from each (a code environment without "
                "levels: its one suite)"})
    extra_domains: tuple[str, ...] = field(default=(), metadata={
        "help": "installed environments' domains (e.g. rg.gcd) whose gold solutions join the SFT mix and the "
                "tokenizer corpus, so the model can learn them in RL"})
    n_extra: int = field(default=200, metadata={"help": "train tasks per extra domain in the SFT mix"})
    sft: SftConfig = field(default_factory=SftConfig, metadata={"help": "SFT schedule"})
    eval_n: int = field(default=40, metadata={"help": "held-out tasks per domain measured at build time (0: skip)"})
    eval_k: int = field(default=8, metadata={"help": "samples per task for pass@k at build time"})
    threads: int = field(default=1, metadata={"help": "torch CPU threads while building (1 is fastest for a tiny model on a busy box)"})

    def __post_init__(self) -> None:
        if self.agent_format not in AGENT_FORMATS:
            raise ValueError(f"agent_format must be one of {AGENT_FORMATS}, got {self.agent_format!r}")
        if not self.code_levels:
            raise ValueError("code_levels must name at least one level")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["sft"] = self.sft.to_dict()  # hashes as before its loop's constants became fields
        if not self.extra_domains:  # a recipe without extra domains hashes as before they existed
            d.pop("extra_domains"), d.pop("n_extra")
        for name in LATER_FIELDS:  # at their default: hashes as before the field existed
            if d[name] == TinyModelRecipe.__dataclass_fields__[name].default:
                d.pop(name)
        if "code_levels" in d:
            d["code_levels"] = list(d["code_levels"])
        return d

    def hash(self) -> str:
        """Content hash of the recipe (the build cache key)."""
        return hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()[:16]


LATER_FIELDS = ("agent_format", "code_levels")
"""Recipe fields declared after tiny-v1 and tiny-v2 were built: left out of the hash at their default, so
those builds stay cached."""

QUICK = TinyModelRecipe(
    release="tiny-quick", hidden_size=64, n_layers=2, n_heads=2, intermediate_size=128,
    n_math=300, n_code=100, n_agent=100, sft=SftConfig(steps=40, batch_size=16, lr=5e-3, warmup=5),
    eval_n=4, eval_k=2,
)
"""A seconds-long build for tests: same pipeline, a weak model."""

MIX_DOMAINS: tuple[str, ...] = (
    "rg.basic_arithmetic", "rg.chain_sum", "rg.decimal_chain_sum", "rg.products", "rg.gcd", "rg.lcm",
    "rg.count_bits", "rg.count_primes", "rg.prime_factorization", "rg.base_conversion", "rg.bitwise_arithmetic",
    "rg.number_sequence", "rg.letter_counting", "rg.leg_counting", "rg.calendar_arithmetic", "rg.syllogism",
    "rg.family_relationships", "rg.aiw", "rg.simple_equations", "rg.bf", "rg.sentence_reordering",
)
"""reasoning-gym domains whose prompt and answer fit the tiny model's SFT length (measured: median
prompt + answer 50-190 tokens of tiny-v1's tokenizer): the domains `tiny-mix` is taught."""

MIX = TinyModelRecipe(release="tiny-mix", extra_domains=MIX_DOMAINS, n_extra=200,
                      sft=SftConfig(steps=2400))
"""tiny-v1's recipe plus 21 reasoning-gym domains: the base of a many-domain training stream."""

CLEAN = TinyModelRecipe(release="tiny-v2", math_noise=0.0)
"""tiny-v1's recipe without injected label noise (no wrong final answers after correct work): the honest base,
whose weaknesses are its own rather than repaired noise."""

PLAN = TinyModelRecipe(release="tiny-v3", math_noise=0.0, agent_format="plan", n_agent=3000,
                       code_levels=CodeEnvironment.levels_ or (1,), sft=SftConfig(steps=3000, max_len=384))
"""tiny-v2 (the clean base) with a worked plan before each agent call, three times the agent SFT data, every
code SFT level and 3000 steps (2000 left math at 0.50): the base whose agent domain is learnable (measured in
docs/models.md)."""

RECIPES: dict[str, TinyModelRecipe] = {"tiny-v1": TinyModelRecipe(), "tiny-v2": CLEAN, "tiny-v3": PLAN,
                                       "tiny-quick": QUICK, "tiny-mix": MIX}


def is_tiny_release(name: str) -> bool:
    """`tiny-quick` or `tiny-v<N>`: releases this project builds (a folder called `tiny-llama` is not one)."""
    return name in RECIPES or re.fullmatch(r"tiny-v\d+", name) is not None


def recipe_for(release: str) -> TinyModelRecipe:
    """The recipe of a release; other `tiny-v<N>` names get the default recipe under that name."""
    if release in RECIPES:
        return RECIPES[release]
    if is_tiny_release(release):
        return TinyModelRecipe(release=release)
    raise KeyError(f"no tiny-model recipe for {release!r}; known: {sorted(RECIPES)}")
