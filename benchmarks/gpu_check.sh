#!/usr/bin/env bash
# GPU check (< 10 min on one GPU), for a session that is lent one. Needs the `[gpu]` extra
# (pip install -e '.[gpu]': vllm, deepspeed) and peft. On a 0.5B-shaped real-architecture model (Qwen2.5-0.5B's
# shapes and 151,936-row vocabulary, random init, Qwen2.5's chat template: flywheel.models.random_checkpoint,
# built offline) it measures:
#   1. bench_rollout.py: the torch engine, model.generate and vLLM side by side (tokens/s), vLLM's full sync ms;
#   2. weight sync into vLLM: full (every weight, in memory) vs adapter-only (a LoRA request, rank 16), ms;
#   3. bench_lora.py --device cuda: a LoRA step vs a full fine-tuning step (time, peak memory, trainable params);
#   4. one GRPO step with DeepSpeed ZeRO-2 doing the update and vLLM sampling, and one LoRA GRPO step
#      (torch backend, vLLM sampling through adapter requests);
#   5. the gpu- and vllm-marked tests.
# Without a CUDA device it measures nothing and says so: every GPU figure is "not measured".
# Usage: bash benchmarks/gpu_check.sh        -> last line: one JSON object of what it measured.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
WORK=$(mktemp -d)
export FLYWHEEL_HOME=${FLYWHEEL_HOME:-$WORK/flywheel}
export TORCH_EXTENSIONS_DIR=${TORCH_EXTENSIONS_DIR:-${HOME:-/tmp}/.cache/flywheel/torch_extensions}
export TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 MLFLOW_ENABLE_TELEMETRY=false
FIGURES="vllm_tokens_per_s torch_tokens_per_s hf_generate_tokens_per_s vllm_full_sync_ms vllm_adapter_sync_ms \
vllm_adapter_first_generate_ms lora_step_s full_step_s lora_peak_mem_mb full_peak_mem_mb lora_trainable_params \
full_trainable_params deepspeed_zero2_step_s deepspeed_zero2_steps lora_grpo_step_s lora_grpo_steps gpu_tests"

if ! "$PY" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  "$PY" - $FIGURES <<'PY'
import json, sys
out = {k: "not measured" for k in sys.argv[1:]}
out.update(device="cpu", gpu="none", note="no CUDA device here: run on a GPU machine with the [gpu] extra for these figures")
print(json.dumps(out, sort_keys=True))
PY
  exit 0
fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true

timeout 300 "$PY" - "$WORK" <<'PY' || exit 1
import sys
from pathlib import Path
from flywheel.models.random_checkpoint import build_random_checkpoint

build_random_checkpoint(Path(sys.argv[1]) / "m05b", shape="0.5b", dtype="bfloat16", max_position=2048)
PY

timeout 300 "$PY" benchmarks/bench_rollout.py --model "$WORK/m05b" --device cuda --prompts 96 --samples 8 \
  --max-new-tokens 128 --batch 256 --repeats 2 | tee "$WORK/bench.log"

timeout 300 "$PY" - "$WORK" <<'PY' | tee "$WORK/sync.log"
import json, sys, time
from pathlib import Path
import torch
from flywheel.rollout.checkpoint import load_model
from flywheel.rollout.types import SamplingParams
from flywheel.tasks.suites import train_suite
from flywheel.train.common.lora import LoraSpec, apply_lora
from flywheel.train.grpo.vllm_generator import VllmGenerator

if __name__ == "__main__":
    m05b = Path(sys.argv[1]) / "m05b"
    model, tok = load_model(m05b, device="cuda", dtype="bfloat16", trainable=True)
    full = VllmGenerator(model, tok, shared=False, gpu_memory_utilization=0.3, dtype="bfloat16")
    full_ms = []
    for v in (1, 2, 3):
        full.sync(model, v)
        full_ms.append(full.sync_ms[-1])
    full.close()
    lora = apply_lora(model, LoraSpec(lora_rank=16), m05b)
    gen = VllmGenerator(lora, tok, shared=False, gpu_memory_utilization=0.3, dtype="bfloat16")
    tasks, sp = train_suite("math", 8), SamplingParams(max_new_tokens=16)
    ad_ms, first_ms = [], []
    for v in (1, 2, 3):
        with torch.no_grad():
            for n, p in lora.named_parameters():
                if "lora_B" in n:
                    p.add_(1e-3)
        gen.sync(lora, v)
        ad_ms.append(gen.sync_ms[-1])
        t = time.perf_counter()
        gen.generate(tasks, 1, sp)  # vLLM loads the new adapter on its first request
        first_ms.append((time.perf_counter() - t) * 1000)
    gen.close()
    print(json.dumps({"vllm_full_sync_ms": round(sorted(full_ms)[1], 1), "vllm_adapter_sync_ms": round(sorted(ad_ms)[1], 1),
                      "vllm_adapter_first_generate_ms": round(sorted(first_ms)[1], 1)}))
PY

timeout 300 "$PY" benchmarks/bench_lora.py --shape 0.5b --device cuda --batch 8 --seq 512 --steps 4 --threads 0 \
  | tee "$WORK/lora.log"

timeout 420 "$PY" - "$WORK" <<'PY' | tee "$WORK/grpo.log"
import json, sys, time
from pathlib import Path
from flywheel.commands.storage import storage_from_env
from flywheel.tasks.suites import train_suite
from flywheel.train.config import TrainConfig
from flywheel.train.grpo.trainer import RunInputs, train_rlvr
from flywheel.train.grpo.vllm_generator import vllm_generator_factory
from flywheel.verifiers.verdict import Verdict

def digits(domain, task, response):
    n = sum(c.isdigit() for c in response)
    return Verdict(min(n, 3) / 3, n >= 3, f"{n} digits")

def one_step(work, name, **kw):
    cfg = TrainConfig(stage="rl", steps=1, prompts_per_step=8, group_size=8, max_new_tokens=32, lr=1e-5,
                      device="cuda", dev_every=0, checkpoint_every=0, dynamic_sampling=False, **kw)
    res = train_rlvr(cfg, RunInputs(work / "m05b", train_suite("math", 64), storage_from_env().ensure(), name),
                     score_fn=digits, generator_factory=vllm_generator_factory(gpu_memory_utilization=0.3))
    assert res.finished and res.steps_done == 1
    return res.steps_done, round(res.history[-1]["time/update_s"], 3)

if __name__ == "__main__":
    work = Path(sys.argv[1])
    ds_steps, ds_s = one_step(work, "gpu-check-zero2", backend="deepspeed", zero_stage=2)
    lora_steps, lora_s = one_step(work, "gpu-check-lora", lora_rank=16)
    print(json.dumps({"deepspeed_zero2_steps": ds_steps, "deepspeed_zero2_step_s": ds_s,
                      "lora_grpo_steps": lora_steps, "lora_grpo_step_s": lora_s}))
PY

timeout 300 "$PY" -m pytest -q -m "gpu or vllm" tests/ 2>&1 | tail -3 | tee "$WORK/tests.log"
"$PY" - "$WORK" $FIGURES <<'PY'
import json, sys
from pathlib import Path
work, out = Path(sys.argv[1]), {k: "not measured (its step failed: see above)" for k in sys.argv[2:]}
for name in ("bench.log", "sync.log", "lora.log", "grpo.log"):
    try:
        fig = json.loads((work / name).read_text().strip().splitlines()[-1])
    except (OSError, IndexError, json.JSONDecodeError):
        continue
    if name == "lora.log":  # bench_lora's figures, under this check's names
        fig = {"lora_step_s": fig["lora"]["step_s"], "full_step_s": fig["full"]["step_s"],
               "lora_peak_mem_mb": fig["lora"]["peak_mem_mb"], "full_peak_mem_mb": fig["full"]["peak_mem_mb"],
               "lora_trainable_params": fig["lora"]["trainable_params"],
               "full_trainable_params": fig["full"]["trainable_params"]}
    if "tokens_per_s" in fig:  # bench_rollout's torch-engine figure
        fig["torch_tokens_per_s"] = fig.pop("tokens_per_s")
    out.update(fig)
tests = (work / "tests.log").read_text().strip().splitlines() if (work / "tests.log").exists() else []
out["gpu_tests"] = tests[-1] if tests else out["gpu_tests"]
out["device"] = "cuda"
print(json.dumps(out, sort_keys=True))
PY
