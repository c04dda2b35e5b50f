#!/usr/bin/env bash
# GPU check (< 10 min on one GPU), for a session that is lent one. Needs the `[gpu]` extra
# (pip install -e '.[gpu]': vllm, deepspeed). What it measures:
#   1. bench_rollout.py on a 0.5B-shaped model (Qwen2.5-0.5B's layer shapes, the project's small vocabulary,
#      random init): the torch engine, model.generate and vLLM side by side, and vLLM's weight-sync ms;
#   2. GRPO steps through the trainer with vLLM sampling the rollouts (weights synced in memory each step)
#      and DeepSpeed ZeRO-2 doing the update;
#   3. the gpu- and vllm-marked tests.
# Usage: bash benchmarks/gpu_check.sh        -> last line: one JSON object of what it measured.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
WORK=$(mktemp -d)
export FLYWHEEL_HOME=${FLYWHEEL_HOME:-$WORK/flywheel}
export TORCH_EXTENSIONS_DIR=${TORCH_EXTENSIONS_DIR:-$HOME/.cache/flywheel/torch_extensions}
export TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 MLFLOW_ENABLE_TELEMETRY=false
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true

"$PY" - "$WORK" <<'PY'
import sys
from pathlib import Path
from flywheel.models.build import build_untrained_checkpoint
from flywheel.models.recipe import QUICK, TinyModelRecipe

work = Path(sys.argv[1])
half = TinyModelRecipe(release="gpu-0.5b", hidden_size=896, n_layers=24, n_heads=14, intermediate_size=4864,
                       max_position=2048)  # head_dim 64
build_untrained_checkpoint(work / "m05b", half)
build_untrained_checkpoint(work / "tiny", QUICK)
PY

timeout 300 "$PY" benchmarks/bench_rollout.py --model "$WORK/m05b" --device cuda --prompts 96 --samples 8 \
  --max-new-tokens 128 --batch 256 --repeats 2 | tee "$WORK/bench.log"

timeout 300 "$PY" - "$WORK" <<'PY' | tee "$WORK/grpo.log"
import json, sys, time
from pathlib import Path
from flywheel.commands.storage import storage_from_env
from flywheel.tasks.suites import train_suite
from flywheel.train.config import GRPOConfig
from flywheel.train.grpo.trainer import RunInputs, train_rlvr
from flywheel.train.grpo.vllm_generator import vllm_generator_factory
from flywheel.verifiers.verdict import Verdict

def digits(domain, task, response):
    n = sum(c.isdigit() for c in response)
    return Verdict(min(n, 3) / 3, n >= 3, f"{n} digits")

if __name__ == "__main__":
    work = Path(sys.argv[1])
    t = time.perf_counter()
    cfg = GRPOConfig(steps=3, prompts_per_step=8, group_size=8, max_new_tokens=24, lr=1e-3, backend="deepspeed",
                     zero_stage=2, device="cuda", dev_every=0)
    res = train_rlvr(cfg, RunInputs(work / "tiny", train_suite("math", 64), storage_from_env().ensure(), "gpu-check"),
                     score_fn=digits, generator_factory=vllm_generator_factory(gpu_memory_utilization=0.3))
    assert res.finished and res.steps_done == 3
    h = res.history[-1]
    print(json.dumps({"grpo_vllm_deepspeed_steps": res.steps_done, "grpo_wall_s": round(time.perf_counter() - t, 1),
                      "grpo_update_s": round(h["time/update_s"], 3),
                      "grpo_generate_tokens_per_s": round(h["tokens_per_s/generate"], 1)}))
PY

timeout 300 "$PY" -m pytest -q -m "gpu or vllm" tests/ 2>&1 | tail -3
"$PY" - "$WORK" <<'PY'
import json, sys
from pathlib import Path
work = Path(sys.argv[1])
out = {}
for name in ("bench.log", "grpo.log"):
    out.update(json.loads((work / name).read_text().strip().splitlines()[-1]))
print(json.dumps(out, sort_keys=True))
PY
