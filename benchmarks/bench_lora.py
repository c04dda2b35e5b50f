"""LoRA against full fine-tuning on the same model: trainable parameters, step time, peak memory, weight sync.

    .venv/bin/python benchmarks/bench_lora.py [--shape small] [--rank 16] [--steps 4] [--device cpu]
        [--vllm .venv-vllm/bin/python]

Builds a random Qwen2 checkpoint of `--shape` offline (flywheel.models.random_checkpoint), then runs the
same training steps (the project's backend: AdamW, clipping, LM loss on a batch of --batch x --seq tokens)
twice, each in a fresh process so peak memory is its own: full fine-tuning and LoRA of --rank on every linear
layer. With `--vllm PYTHON` (a venv where vLLM imports) it also times syncing into vLLM: every weight in
memory vs the adapters alone (a LoRA request). Per run: trainable parameters, median step time, peak memory above the loaded model (CPU: peak RSS;
CUDA: max allocated), and the latency of syncing the new policy into a second in-process engine copy (full:
every weight; LoRA: the adapters alone). Prints ratios LoRA / full; last line: one JSON object.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def child(model_dir: str, mode: str, rank: int, steps: int, batch: int, seq: int, device: str) -> dict:
    """One run in this process: `mode` full | lora."""
    import copy

    import torch

    from flywheel.rollout.checkpoint import load_model
    from flywheel.rollout.torch_engine import TorchEngine
    from flywheel.train.common.backend import make_backend
    from flywheel.train.common.lora import LoraSpec, adapter_state, apply_lora, trainable_params
    from flywheel.train.common.placement import Placement
    from flywheel.train.common.schedule import OptimSpec

    torch.manual_seed(0)
    model, tok = load_model(model_dir, device=device, trainable=True)
    model = apply_lora(model, LoraSpec(lora_rank=rank if mode == "lora" else 0), model_dir)
    engine = TorchEngine(copy.deepcopy(model).eval(), tok, device=device)  # the rollout side's copy
    cuda = device == "cuda"
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base_mem = torch.cuda.memory_allocated()
    base_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    backend = make_backend(model, OptimSpec(lr=1e-4, betas=(0.9, 0.999), weight_decay=0.0, max_grad_norm=1.0, warmup_steps=0,
                                             cosine=False, horizon=steps), Placement(device=device), batch)
    ids = torch.randint(4, len(tok), (batch, seq), device=device)
    mask = torch.ones_like(ids)
    times, syncs = [], []
    for _ in range(steps):
        t0 = time.perf_counter()
        loss = backend.lm_loss(ids, mask, ids)
        backend.backward(loss)
        backend.step()
        if cuda:
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
        t1 = time.perf_counter()
        engine.update_weights(adapter_state(model) if mode == "lora" else model.state_dict(), len(times))
        if cuda:
            torch.cuda.synchronize()
        syncs.append((time.perf_counter() - t1) * 1000)
    peak = (torch.cuda.max_memory_allocated() - base_mem) if cuda else \
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - base_rss
    trainable, total = trainable_params(model)
    sent = adapter_state(model) if mode == "lora" else model.state_dict()
    return {"mode": mode, "trainable_params": trainable, "total_params": total,
            "step_s": statistics.median(times[1:] or times), "peak_mem_mb": round(peak / 2**20, 1),
            "sync_ms": round(statistics.median(syncs[1:] or syncs), 2),
            "sync_mb": round(sum(v.numel() * v.element_size() for v in sent.values()) / 2**20, 2)}


def vllm_child(model_dir: str, rank: int, reps: int = 3) -> dict:
    """Sync into vLLM (this process's vLLM): every weight in memory vs the adapters alone (a LoRA request),
    and the first generate after an adapter sync (vLLM loads the adapter then) vs a steady one."""
    import torch

    from flywheel.rollout.checkpoint import load_model
    from flywheel.rollout.types import SamplingParams
    from flywheel.tasks.suites import train_suite
    from flywheel.train.common.lora import LoraSpec, apply_lora
    from flywheel.train.grpo.vllm_generator import VllmGenerator

    model, tok = load_model(model_dir, trainable=True)
    full = VllmGenerator(model, tok, shared=False)
    for v in range(1, reps + 1):
        full.sync(model, v)
    full.close()
    lora = apply_lora(model, LoraSpec(lora_rank=rank), model_dir)
    gen = VllmGenerator(lora, tok, shared=False)
    tasks, sp = train_suite("math", 4), SamplingParams(temperature=0.0, max_new_tokens=8)
    first, steady = [], []
    for v in range(1, reps + 1):
        with torch.no_grad():
            for n, p in lora.named_parameters():
                if "lora_B" in n:
                    p.add_(1e-3)
        gen.sync(lora, v)
        for out in (first, steady):
            t = time.perf_counter()
            gen.generate(tasks, 1, sp)
            out.append((time.perf_counter() - t) * 1000)
    gen.close()
    return {"vllm_full_sync_ms": round(statistics.median(full.sync_ms), 1),
            "vllm_adapter_sync_ms": round(statistics.median(gen.sync_ms), 1),
            "vllm_generate_after_adapter_sync_ms": round(statistics.median(first), 1),
            "vllm_generate_steady_ms": round(statistics.median(steady), 1)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", default="small", help="tiny | small | 0.5b (flywheel.models.random_checkpoint)")
    ap.add_argument("--rank", type=int, default=16)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads (0: torch's default)")
    ap.add_argument("--vllm", default=None, help="a python whose vLLM imports (e.g. .venv-vllm/bin/python): "
                                                 "also time vLLM's full vs adapter-only sync")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--model-dir", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    import torch

    if args.threads > 0:
        torch.set_num_threads(args.threads)
    if args.child == "vllm":
        print(json.dumps(vllm_child(args.model_dir, args.rank)))
        return 0
    if args.child:
        print(json.dumps(child(args.model_dir, args.child, args.rank, args.steps, args.batch, args.seq, args.device)))
        return 0
    from flywheel.models.random_checkpoint import build_random_checkpoint

    with tempfile.TemporaryDirectory(prefix="bench-lora-") as tmp:
        model_dir = build_random_checkpoint(Path(tmp) / args.shape, shape=args.shape)
        runs = {}
        for mode in ("full", "lora"):
            cmd = [sys.executable, __file__, "--child", mode, "--model-dir", str(model_dir), "--shape", args.shape,
                   "--rank", str(args.rank), "--steps", str(args.steps), "--batch", str(args.batch),
                   "--seq", str(args.seq), "--device", args.device, "--threads", str(args.threads)]
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            runs[mode] = json.loads(out.strip().splitlines()[-1])
        if args.vllm:  # vLLM's own sync: every weight vs a LoRA request
            cmd = [args.vllm, __file__, "--child", "vllm", "--model-dir", str(model_dir), "--rank", str(args.rank)]
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            runs["vllm"] = json.loads(out.strip().splitlines()[-1])
    full, lora = runs["full"], runs["lora"]
    for r in (full, lora):
        print(f"{r['mode']:5s} trainable {r['trainable_params']:>12,} of {r['total_params']:,}  step {r['step_s']:.3f}s"
              f"  peak +{r['peak_mem_mb']:.0f} MB  sync {r['sync_ms']:.1f} ms ({r['sync_mb']:.2f} MB)")
    ratios = {"trainable": lora["trainable_params"] / full["trainable_params"],
              "step_time": lora["step_s"] / full["step_s"],
              "peak_mem": lora["peak_mem_mb"] / full["peak_mem_mb"] if full["peak_mem_mb"] > 0 else None,
              "sync_time": lora["sync_ms"] / full["sync_ms"] if full["sync_ms"] > 0 else None}
    if "vllm" in runs:
        v = runs["vllm"]
        ratios["vllm_sync_time"] = v["vllm_adapter_sync_ms"] / v["vllm_full_sync_ms"]
        print(f"vLLM sync: full {v['vllm_full_sync_ms']:.0f} ms, adapter {v['vllm_adapter_sync_ms']:.0f} ms; "
              f"generate after an adapter sync {v['vllm_generate_after_adapter_sync_ms']:.0f} ms vs "
              f"{v['vllm_generate_steady_ms']:.0f} ms steady")
    print("LoRA / full: " + "  ".join(f"{k} {v:.3f}" for k, v in ratios.items() if v is not None))
    print(json.dumps({"shape": args.shape, "rank": args.rank, "device": args.device, "batch": args.batch,
                      "seq": args.seq, "steps": args.steps, "full": full, "lora": lora, "vllm": runs.get("vllm"),
                      "lora_over_full": {k: (round(v, 4) if v is not None else None) for k, v in ratios.items()}}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
