#!/usr/bin/env bash
# One short GPU smoke check (< 5 min on one GPU): vLLM generation + in-process weight sync, and a
# DeepSpeed (ZeRO-2, bf16) GRPO step on CUDA through the trainer. Needs the `[gpu]` extra:
#   pip install -e '.[gpu]'        (vllm, deepspeed)
# Usage: bash benchmarks/gpu_check.sh        -> last line: one JSON object of what it measured.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
export FLYWHEEL_HOME=${FLYWHEEL_HOME:-$(mktemp -d)/flywheel}
export TORCH_EXTENSIONS_DIR=${TORCH_EXTENSIONS_DIR:-$HOME/.cache/flywheel/torch_extensions}
export TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 MLFLOW_ENABLE_TELEMETRY=false
# vLLM in this process (no engine subprocess), so the trainer can hand it tensors directly.
export VLLM_ENABLE_V1_MULTIPROCESSING=0 VLLM_ALLOW_INSECURE_SERIALIZATION=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true

timeout 290 "$PY" - <<'EOF'
import json, sys, time, tempfile
from pathlib import Path
import torch

assert torch.cuda.is_available(), "no CUDA GPU visible to torch"
out = {"gpu": torch.cuda.get_device_name(0)}
t_all = time.perf_counter()
work = Path(tempfile.mkdtemp())

# 1. a small Llama checkpoint with the project's tokenizer (head_dim 64: every vLLM attention backend takes it)
from transformers import LlamaConfig, LlamaForCausalLM
from flywheel.models.chat import render_example, render_prompt
from flywheel.models.tokenizer import train_tokenizer
from flywheel.tasks.suites import train_suite

tasks = train_suite("math", 64)
tok = train_tokenizer([render_example(t.domain, t.prompt, t.solution) for t in tasks], vocab_size=400)
torch.manual_seed(0)
model = LlamaForCausalLM(LlamaConfig(
    vocab_size=len(tok), hidden_size=256, intermediate_size=512, num_hidden_layers=2, num_attention_heads=4,
    num_key_value_heads=4, max_position_embeddings=512, tie_word_embeddings=False,
    pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id, bos_token_id=tok.bos_token_id))
base_dir = work / "base"
model.save_pretrained(base_dir)
tok.save_pretrained(base_dir)

# 2. vLLM (the project's VllmEngine): generate, sync new weights in place, check vLLM samples from them
from flywheel.rollout.torch_engine import recompute_logprobs
from flywheel.rollout.types import SamplingParams
from flywheel.rollout.vllm_engine import VllmEngine

t = time.perf_counter()
engine = VllmEngine.from_pretrained(base_dir, dtype="bfloat16", gpu_memory_utilization=0.25, max_model_len=512)
prompts = [render_prompt("math", t.prompt) for t in tasks[:32]]
rolls = engine.generate(prompts, n_samples=4, sampling=SamplingParams(temperature=1.0, max_new_tokens=32, seed=0))
out["vllm_load_and_generate_s"] = round(time.perf_counter() - t, 2)
out["vllm_rollouts"] = len(rolls)

torch.manual_seed(1)
new = LlamaForCausalLM(model.config).eval()  # a visibly different policy: a second random init
t = time.perf_counter()
engine.update_weights(new.state_dict(), version=1)
out["vllm_weight_sync_s"] = round(time.perf_counter() - t, 3)
after = engine.generate(prompts[:8], sampling=SamplingParams(temperature=1.0, max_new_tokens=16, seed=0))
assert all(r.policy_version == 1 for r in after)
new = new.to("cuda", torch.float32)
diffs = []
for r in after:  # vLLM's sampling log-probs must match the NEW weights under HF (bf16 tolerance)
    hf = recompute_logprobs(new, r.prompt_ids, r.token_ids, temperature=1.0).float().cpu()
    diffs.append(float((hf - torch.tensor(r.logprobs)).abs().mean()))
out["vllm_vs_hf_logprob_mae_after_sync"] = round(sum(diffs) / len(diffs), 4)
assert out["vllm_vs_hf_logprob_mae_after_sync"] < 0.1, f"weight sync did not take: {out}"
del engine
torch.cuda.empty_cache()

# 3. DeepSpeed ZeRO-2 GRPO steps on CUDA through the trainer (digit-count reward: signal from a random model)
from flywheel.train.config import GRPOConfig
from flywheel.train.telemetry import Telemetry
from flywheel.train.trainer import train_rlvr
from flywheel.verifiers.verdict import Verdict

def digits(domain, task, response):
    n = sum(c.isdigit() for c in response)
    return Verdict(min(n, 3) / 3, n >= 3, f"{n} digits")

t = time.perf_counter()
cfg = GRPOConfig(steps=3, prompts_per_step=8, group_size=8, max_new_tokens=24, lr=1e-3, backend="deepspeed",
                 zero_stage=2, device="cuda", checkpoint_every=3)
res = train_rlvr(cfg, str(base_dir), tasks, run_name="gpu-check", score_fn=digits,
                 telemetry=Telemetry(None, enabled=False))
h = res.history[-1]
out.update({"deepspeed_steps": res.steps_done, "deepspeed_wall_s": round(time.perf_counter() - t, 2),
            "deepspeed_update_s": round(h["time/update_s"], 3), "gpu_mem_gb": round(h.get("gpu/mem_max_allocated_gb", 0), 3),
            "generate_tokens_per_s": round(h["tokens_per_s/generate"], 1)})
assert res.finished and res.steps_done == 3
out["total_s"] = round(time.perf_counter() - t_all, 1)
print(json.dumps(out, sort_keys=True))
EOF
# and the gpu-marked tests of the suite (CUDA DeepSpeed; vLLM engine tests where present)
timeout 120 "$PY" -m pytest -q -m gpu -x tests/ 2>&1 | tail -3
