"""The embedded default base model: a tiny Llama built offline from the demo task corpus.

Recipe, top to bottom: train a BPE tokenizer on the train suites of all domains, build a
`LlamaConfig` model of ~1M parameters, supervised fine-tune it on gold solutions with
some math answers deliberately perturbed (`math_noise`), then measure held-out pass@1
and pass@k. The noise is what makes it a good RL starting point: the correct answer
stays the mode, but temperature-1 samples are diffuse, so pass@1 sits well below pass@k
and sharpening (GRPO) has room to raise it. Saved with `save_pretrained`, so the
generic HF loader (`flywheel.models.hf.load_model`) loads it like any checkpoint.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from flywheel.models.sft import SftConfig, supervised_finetune
from flywheel.progress import quiet_transformers_bars

RECIPE_FILE, BUILD_FILE = "flywheel_recipe.json", "flywheel_build.json"


@dataclass(frozen=True)
class TinyModelRecipe:
    """Everything that determines the tiny model; its hash keys the build cache."""

    release: str = field(default="tiny-v1", metadata={"help": "release name (the base_model partition)"})
    seed: int = field(default=0, metadata={"help": "seed for init, data and SFT order"})
    vocab_size: int = field(default=1024, metadata={"help": "BPE vocabulary cap (the corpus may yield fewer)"})
    hidden_size: int = field(default=96, metadata={"help": "model width"})
    n_layers: int = field(default=3, metadata={"help": "transformer blocks"})
    n_heads: int = field(default=4, metadata={"help": "attention heads"})
    intermediate_size: int = field(default=256, metadata={"help": "MLP width"})
    max_position: int = field(default=512, metadata={"help": "max sequence length (RoPE)"})
    n_math: int = field(default=3000, metadata={"help": "math train tasks in the SFT mix"})
    n_code: int = field(default=400, metadata={"help": "code train tasks in the SFT mix"})
    n_agent: int = field(default=1000, metadata={"help": "agent train tasks in the SFT mix"})
    math_noise: float = field(default=0.3, metadata={"help": "share of math solutions with a perturbed final answer"})
    math_format: str = field(default="scratchpad", metadata={"help": "math SFT targets: scratchpad (digit by digit) | gold"})
    sft: SftConfig = field(default_factory=SftConfig, metadata={"help": "SFT schedule"})
    eval_n: int = field(default=40, metadata={"help": "held-out tasks per domain measured at build time (0: skip)"})
    eval_k: int = field(default=8, metadata={"help": "samples per task for pass@k at build time"})
    threads: int = field(default=1, metadata={"help": "torch CPU threads while building (1 is fastest for a tiny model on a busy box)"})

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def hash(self) -> str:
        """Content hash of the recipe (the build cache key)."""
        return hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()[:16]


QUICK = TinyModelRecipe(
    release="tiny-quick", hidden_size=64, n_layers=2, n_heads=2, intermediate_size=128,
    n_math=300, n_code=100, n_agent=100, sft=SftConfig(steps=40, batch_size=16, lr=5e-3, warmup=5),
    eval_n=4, eval_k=2,
)
"""A seconds-long build for tests: same pipeline, a weak model."""

RECIPES: dict[str, TinyModelRecipe] = {"tiny-v1": TinyModelRecipe(), "tiny-quick": QUICK}


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


_OP = re.compile(r"(\d+) ([+\-*]) (\d+) = (\d+)")


def _digits(n: int) -> list[int]:
    return [int(c) for c in reversed(str(n))]


def _add(x: int, y: int) -> str:
    if x < 10 and y < 10:
        return f"{x}+{y}={x + y}"
    dx, dy, carry, parts = _digits(x), _digits(y), 0, []
    for i in range(max(len(dx), len(dy))):
        a, b = (dx[i] if i < len(dx) else 0), (dy[i] if i < len(dy) else 0)
        s = a + b + carry
        parts.append(f"{a}+{b}{'+1' if carry else ''}={s}")
        carry = s // 10
    return f"{x}+{y}: " + ", ".join(parts) + f" so {x + y}"


def _sub(x: int, y: int) -> str:
    if x < 10:
        return f"{x}-{y}={x - y}"
    dx, dy, borrow, parts = _digits(x), _digits(y), 0, []
    for i in range(len(dx)):
        top, b = dx[i] - borrow, (dy[i] if i < len(dy) else 0)
        borrow = 1 if top < b else 0
        top += 10 * borrow
        parts.append(f"{top}-{b}={top - b}")
    return f"{x}-{y}: " + ", ".join(parts) + f" so {x - y}"


def _mul(k: int, x: int) -> str:
    if x < 10:
        return f"{k}*{x}={k * x}"
    dx, carry, parts = _digits(x), 0, []
    for d in dx:
        s = k * d + carry
        parts.append(f"{k}*{d}{f'+{carry}' if carry else ''}={s}")
        carry = s // 10
    return f"{k}*{x}: " + ", ".join(parts) + f" so {k * x}"


def scratchpad(solution: str) -> str:
    """The gold math solution with each operation worked digit by digit (units first, with carries).

    A ~1M-parameter model cannot add two-digit numbers in one token step, but it can learn
    single-digit facts and copying; the verifier only reads `Answer: N`.
    """
    steps = []
    for a, op, b, _ in _OP.findall(solution):
        a, b = int(a), int(b)
        steps.append(_add(a, b) if op == "+" else _sub(a, b) if op == "-" else _mul(a, b))
    ans = solution.rsplit("Answer: ", 1)[1]
    return ". ".join(steps) + f". Answer: {ans}"


def _perturb_answer(solution: str, answer: str, rng: random.Random) -> str:
    """The same work with a wrong final `Answer:` (a plausible slip, never negative)."""
    a = int(answer)
    wrong = max(0, a + rng.choice([-3, -2, -1, 1, 2, 3]))
    if wrong == a:
        wrong = a + 1
    head, _, _ = solution.rpartition(f"Answer: {answer}")
    return f"{head}Answer: {wrong}"


def sft_mix(recipe: TinyModelRecipe) -> list[tuple[str, str, str]]:
    """(domain, prompt, response) training examples: train suites only, math partly noisy."""
    from flywheel.tasks.suites import train_suite

    rng = random.Random(recipe.seed)
    out: list[tuple[str, str, str]] = []
    for t in train_suite("math", recipe.n_math):
        sol = scratchpad(t.solution) if recipe.math_format == "scratchpad" else t.solution
        if rng.random() < recipe.math_noise:
            sol = _perturb_answer(sol, t.reference["answer"], rng)
        out.append(("math", t.prompt, sol))
    out += [("code", t.prompt, t.solution) for t in train_suite("code", recipe.n_code)]
    out += [("agent", t.prompt, t.solution) for t in train_suite("agent", recipe.n_agent)]
    return out


def build_model(recipe: TinyModelRecipe, vocab_size: int, pad_id: int, eos_id: int, bos_id: int) -> Any:
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(
        vocab_size=vocab_size, hidden_size=recipe.hidden_size, intermediate_size=recipe.intermediate_size,
        num_hidden_layers=recipe.n_layers, num_attention_heads=recipe.n_heads,
        num_key_value_heads=recipe.n_heads, max_position_embeddings=recipe.max_position,
        tie_word_embeddings=True, pad_token_id=pad_id, eos_token_id=eos_id, bos_token_id=bos_id,
        rms_norm_eps=1e-5, attn_implementation="sdpa",
    )
    torch.manual_seed(recipe.seed)
    return LlamaForCausalLM(cfg)


@dataclass
class BuildResult:
    """Where the model is, what it is, and how it scored when built."""

    path: Path
    release: str
    recipe_hash: str
    params: int
    vocab: int
    pass_rates: dict[str, dict[str, float]]
    seconds: float
    cached: bool

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["path"] = str(self.path)
        return d


def cached_build(out_dir: str | Path, recipe: TinyModelRecipe) -> BuildResult | None:
    """The build in `out_dir` if it exists and was made from exactly `recipe`."""
    from flywheel.models.hf import is_checkpoint_dir

    p = Path(out_dir)
    try:
        info = json.loads((p / BUILD_FILE).read_text())
    except (OSError, json.JSONDecodeError):
        return None
    if info.get("recipe_hash") != recipe.hash() or not is_checkpoint_dir(p):
        return None
    info.update(path=p, cached=True)
    return BuildResult(**info)


def build_tiny_model(out_dir: str | Path, recipe: TinyModelRecipe | None = None, force: bool = False) -> BuildResult:
    """Build (or reuse the cached build of) the tiny model into `out_dir`."""
    from flywheel.models.hf import param_count
    from flywheel.models.tokenizer import train_tokenizer
    from flywheel.tasks.suites import train_suite

    recipe = recipe or TinyModelRecipe()
    out = Path(out_dir)
    if not force and (hit := cached_build(out, recipe)) is not None:
        return hit
    t0 = time.perf_counter()
    prev_threads = torch.get_num_threads()
    torch.set_num_threads(max(1, recipe.threads))
    try:
        from flywheel.models.chat import render_example

        mix = sft_mix(recipe)
        corpus = [render_example(d, p, r) for d, p, r in mix]  # what the model sees, plus the gold formats
        corpus += [render_example(t.domain, t.prompt, t.solution) for d in ("math", "code", "agent")
                   for t in train_suite(d, 300)]
        tok = train_tokenizer(corpus, recipe.vocab_size)
        model = build_model(recipe, len(tok), tok.pad_token_id, tok.eos_token_id, tok.bos_token_id)
        supervised_finetune(model, tok, mix, recipe.sft)
        out.mkdir(parents=True, exist_ok=True)
        quiet_transformers_bars()
        model.save_pretrained(out)
        tok.save_pretrained(out)
        rates = measure_pass_rates(model, tok, recipe.eval_n, recipe.eval_k, seed=recipe.seed) if recipe.eval_n else {}
    finally:
        torch.set_num_threads(prev_threads)
    res = BuildResult(out, recipe.release, recipe.hash(), param_count(model), len(tok), rates,
                      round(time.perf_counter() - t0, 2), False)
    (out / RECIPE_FILE).write_text(json.dumps(recipe.to_dict(), indent=2, sort_keys=True))
    info = {k: v for k, v in res.to_dict().items() if k not in ("path", "cached")}
    (out / BUILD_FILE).write_text(json.dumps(info, indent=2, sort_keys=True))
    return res


def score_responses(tasks: list[Any], responses: list[tuple[int, str]], use_verifiers: bool = True) -> list[bool]:
    """Pass/fail of (task index, response) pairs: the project's verifiers, else the local check.

    Identical pairs are judged once (a tiny model repeats itself a lot).
    """
    from flywheel.models.scoring import score

    uniq = sorted(set(responses))
    verdict: dict[tuple[int, str], bool] = {}
    if use_verifiers:
        try:
            from flywheel.verifiers import score_batch

            vs = score_batch([(tasks[i].domain, tasks[i].verifier_task(), r) for i, r in uniq], concurrency=2,
                             errors="none")
            verdict = {k: bool(v.passed) for k, v in zip(uniq, vs, strict=True) if v is not None}
        except ImportError:
            pass
    for i, r in uniq:
        if (i, r) not in verdict:
            verdict[(i, r)] = score(tasks[i], r)
    return [verdict[x] for x in responses]


def measure_pass_rates(model: Any, tokenizer: Any, n: int, k: int, seed: int = 0,
                       domains: tuple[str, ...] = ("math", "code", "agent"), temperature: float = 1.0,
                       max_new_tokens: int = 160, use_verifiers: bool = True) -> dict[str, dict[str, float]]:
    """Held-out pass@1 (mean over k samples at `temperature`), pass@k, and greedy pass rate per domain."""
    from flywheel.rollout import generate_for_tasks
    from flywheel.rollout.torch_engine import TorchEngine
    from flywheel.rollout.types import SamplingParams
    from flywheel.tasks.suites import heldout_suite

    engine = TorchEngine(model, tokenizer)
    out: dict[str, dict[str, float]] = {}
    for d in domains:
        tasks = heldout_suite(d)[:n]
        sp = SamplingParams(temperature=temperature, max_new_tokens=max_new_tokens, seed=seed)
        rs = generate_for_tasks(engine, tasks, k, sp)
        greedy = generate_for_tasks(engine, tasks, 1, SamplingParams(temperature=0.0, max_new_tokens=max_new_tokens))
        ok = score_responses(tasks, [(r.group_id, r.text) for r in rs + greedy], use_verifiers)
        sampled, gok = ok[: len(rs)], ok[len(rs):]
        per_task = [sampled[i * k:(i + 1) * k] for i in range(len(tasks))]
        out[d] = {
            "pass@1": round(sum(sampled) / max(1, len(sampled)), 4),
            f"pass@{k}": round(sum(any(x) for x in per_task) / max(1, len(tasks)), 4),
            "greedy": round(sum(gok) / max(1, len(tasks)), 4),
            "n_tasks": len(tasks),
        }
    return out
