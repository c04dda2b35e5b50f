"""Rollout throughput: the torch engine vs `transformers`' `model.generate`, same model, prompts, sampling.

Both sample at temperature 1 (no top-k/top-p) from the same left-padded batches of
chat-templated held-out prompts (all three domains) and stop at EOS or `--max-new-tokens`.
Throughput counts the tokens each run actually produced (up to and including EOS).
Last line: one JSON object with the measured figures.

    python benchmarks/bench_rollout.py [--model DIR] [--prompts 48] [--samples 4]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import torch


def _model_dir(arg: str | None) -> Path:
    from flywheel.commands.storage import storage_from_env
    from flywheel.models.build import build_tiny_model
    from flywheel.models.recipe import QUICK
    from flywheel.rollout.checkpoint import is_checkpoint_dir

    if arg:
        return Path(arg)
    built = storage_from_env().base_models / "tiny-v1"
    if is_checkpoint_dir(built):
        return built
    print("tiny-v1 not built here; using the tiny-quick recipe (run `flywheel model build` for tiny-v1)")
    return build_tiny_model(Path(tempfile.mkdtemp()) / "tiny-quick", QUICK).path


def _hf_generate(model, tok, prompt_ids: list[list[int]], max_new: int, batch: int, seed: int) -> int:
    """Tokens produced by `model.generate` (sampling, T=1, no top-k/top-p), in batches of `batch`."""
    torch.manual_seed(seed)
    produced = 0
    for lo in range(0, len(prompt_ids), batch):
        chunk = prompt_ids[lo: lo + batch]
        width = max(len(p) for p in chunk)
        ids = torch.full((len(chunk), width), tok.pad_token_id)
        mask = torch.zeros_like(ids)
        for i, p in enumerate(chunk):
            ids[i, width - len(p):] = torch.tensor(p)
            mask[i, width - len(p):] = 1
        out = model.generate(input_ids=ids, attention_mask=mask, do_sample=True, temperature=1.0, top_k=0, top_p=1.0,
                             max_new_tokens=max_new, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
        for row in out[:, width:].tolist():
            produced += row.index(tok.eos_token_id) + 1 if tok.eos_token_id in row else len(row)
    return produced


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None, help="checkpoint folder (default: tiny-v1 under $FLYWHEEL_HOME)")
    ap.add_argument("--prompts", type=int, default=48, help="held-out prompts (split over the 3 domains)")
    ap.add_argument("--samples", type=int, default=4, help="samples per prompt")
    ap.add_argument("--max-new-tokens", type=int, default=96)
    ap.add_argument("--batch", type=int, default=64, help="sequences per batch, both engines")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    from flywheel.rollout.chat import render_prompt
    from flywheel.rollout.checkpoint import load_model, param_count
    from flywheel.rollout.torch_engine import TorchEngine
    from flywheel.rollout.types import SamplingParams
    from flywheel.tasks.suites import heldout_suite

    path = _model_dir(args.model)
    model, tok = load_model(path)
    per = max(1, args.prompts // 3)
    prompts = [render_prompt(d, t.prompt) for d in ("math", "code", "agent") for t in heldout_suite(d)[:per]]
    engine = TorchEngine(model, tok, max_batch_size=args.batch)
    prompt_ids = [engine.encode(p) for p in prompts for _ in range(args.samples)]
    sp = SamplingParams(temperature=1.0, max_new_tokens=args.max_new_tokens, seed=0)

    engine.generate(prompts[:2], 2, SamplingParams(max_new_tokens=8))  # warm-up both paths
    _hf_generate(model, tok, prompt_ids[:4], 8, args.batch, 0)
    ours_t, hf_t, ours_n, hf_n = [], [], 0, 0
    for rep in range(args.repeats):
        t0 = time.perf_counter()
        rs = engine.generate(prompts, args.samples, SamplingParams(**{**sp.__dict__, "seed": rep}))
        ours_t.append(time.perf_counter() - t0)
        ours_n += sum(len(r.token_ids) for r in rs)
        t0 = time.perf_counter()
        hf_n += _hf_generate(model, tok, prompt_ids, args.max_new_tokens, args.batch, rep)
        hf_t.append(time.perf_counter() - t0)
    ours_tps, hf_tps = ours_n / sum(ours_t), hf_n / sum(hf_t)
    speedup = ours_tps / hf_tps
    print(f"model {path} ({param_count(model):,} params), {len(prompt_ids)} sequences x {args.repeats} repeats, "
          f"max_new_tokens {args.max_new_tokens}, batch {args.batch}, {args.threads} thread(s)")
    print(f"{'engine':<26}{'tokens':>10}{'seconds':>10}{'tokens/s':>12}")
    print(f"{'flywheel torch engine':<26}{ours_n:>10}{sum(ours_t):>10.2f}{ours_tps:>12.1f}")
    print(f"{'transformers generate':<26}{hf_n:>10}{sum(hf_t):>10.2f}{hf_tps:>12.1f}")
    print(f"speedup vs model.generate: {speedup:.2f}x (target >= 1.5x)")
    print(json.dumps({"tokens_per_s": round(ours_tps, 1), "hf_generate_tokens_per_s": round(hf_tps, 1),
                      "speedup_vs_hf_generate": round(speedup, 3), "sequences": len(prompt_ids),
                      "max_new_tokens": args.max_new_tokens, "threads": args.threads, "params": param_count(model)}))


if __name__ == "__main__":
    main()
