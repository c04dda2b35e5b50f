"""The embedded default base model: a tiny Llama built offline from the demo task corpus.

Recipe, top to bottom: train a BPE tokenizer on the train suites of all domains
(`flywheel.models.tokenizer`), build a `LlamaConfig` model of ~1M parameters, supervised
fine-tune it on gold solutions with some math answers deliberately perturbed
(`flywheel.models.sft_data`), then measure held-out pass@1 and pass@k
(`flywheel.models.measure`). Saved with `save_pretrained`, so the generic HF loader
(`flywheel.rollout.checkpoint.load_model`) loads it like any checkpoint; the recipe's hash
keys the cache, so an unchanged recipe is built once.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from transformers import LlamaConfig, LlamaForCausalLM

from flywheel.defaults import DEFAULT_BASE_MODEL
from flywheel.models.measure import measure_pass_rates
from flywheel.models.recipe import QUICK, TinyModelRecipe, recipe_for
from flywheel.models.sft_data import sft_mix
from flywheel.models.tokenizer import train_tokenizer
from flywheel.paths import BUILD_FILE, RECIPE_FILE
from flywheel.progress import quiet_transformers_bars
from flywheel.rollout.chat import render_example
from flywheel.rollout.checkpoint import is_checkpoint_dir, param_count
from flywheel.tasks.suites import DOMAINS, train_suite
from flywheel.train.common.sft import supervised_finetune


def build_model(recipe: TinyModelRecipe, vocab_size: int, pad_id: int, eos_id: int, bos_id: int) -> Any:
    """The untrained tiny Llama of `recipe` (seeded init)."""
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


def build_untrained_checkpoint(path: str | Path, recipe: TinyModelRecipe | None = None) -> Path:
    """An untrained tiny Llama (default: the `tiny-quick` shape, seeded init) and the project's tokenizer,
    saved as an HF checkpoint in seconds: a policy for tests and benchmarks whose cost matters, not its answers."""
    corpus = [render_example(t.domain, t.prompt, t.solution) for d in DOMAINS for t in train_suite(d, 60)]
    tok = train_tokenizer(corpus, 400)
    model = build_model(recipe or QUICK, len(tok), tok.pad_token_id, tok.eos_token_id, tok.bos_token_id)
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return Path(path)


def cached_build(out_dir: str | Path, recipe: TinyModelRecipe) -> BuildResult | None:
    """The build in `out_dir` if it exists and was made from exactly `recipe`."""
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
    """Build (or reuse the cached build of) the tiny model into `out_dir` (default: the default base's recipe)."""
    recipe = recipe or recipe_for(DEFAULT_BASE_MODEL)
    out = Path(out_dir)
    if not force and (hit := cached_build(out, recipe)) is not None:
        return hit
    t0 = time.perf_counter()
    prev_threads = torch.get_num_threads()
    torch.set_num_threads(max(1, recipe.threads))
    try:
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
