"""Rejection-sampling fine-tuning (RFT): supervised fine-tuning on verified-successful responses only.

The stage production flywheels run first: collect candidate responses for the run's tasks,
keep those the verifiers pass, and fine-tune on them with the shared fine-tuning step (loss on
the response only, the shared chat template; the run's backend, torch or DeepSpeed). Candidates come from two places
(`flywheel.train.rft.data`): logged production responses of the run's tasks (re-verified:
the log's own outcome only preselects them) and the policy's own samples, drawn with the
torch rollout engine. Both are judged by the same `score_fn` the RL run uses.

    result = run_rft(RftConfig(), "models/base/tiny-v1", tasks, "models/policies/rft-tiny-v1",
                     warehouse=paths.warehouse)
    result.counts.examples, result.losses[-1], result.output_dir   # an HF folder

Deterministic for a seed: the same config, checkpoint, tasks and logs give the same dataset
and the same weights. Only the run's tasks are used (the trainer's pool and replay, already
decontaminated against the held-out suites); logged traffic of other prompts is never read.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from flywheel.gpu import GpuSpec, resolve_device
from flywheel.paths import RECIPE_FILE
from flywheel.rollout.checkpoint import load_model
from flywheel.tasks.base import Task
from flywheel.train.common.lora import apply_lora, is_lora, lora_of, write_adapter_info
from flywheel.train.common.placement import placement_of
from flywheel.train.common.rollouts import ScoreFn, default_score_fn
from flywheel.train.common.sft import SftConfig, supervised_finetune
from flywheel.train.rft.config import RftConfig
from flywheel.train.rft.data import Progress, RftCounts, RftExample, collect_examples


def sft_config(config: RftConfig) -> SftConfig:
    """The SFT schedule an RFT run runs (the fine-tuning step it shares with the base model's build,
    `flywheel.train.common.sft`; AdamW betas and clipping are SftConfig's)."""
    return SftConfig(steps=config.steps, batch_size=config.batch_size, lr=config.lr, warmup=config.warmup,
                     max_len=config.max_len, seed=config.seed)


@dataclass
class RftResult:
    """What an RFT run produced; `output_dir` is an HF folder (`from_pretrained`-loadable)."""

    output_dir: Path
    counts: RftCounts
    losses: list[float]
    wall_s: float
    cpu_s: float
    examples: list[RftExample] = field(default_factory=list)
    phase_s: dict[str, float] = field(default_factory=dict)
    carried: int = 0  # examples carried over from the champion's dataset (`restart_from`), not already new

    def to_dict(self) -> dict[str, Any]:
        return {"output_dir": str(self.output_dir), "counts": self.counts.to_dict(), "losses": self.losses,
                "wall_s": self.wall_s, "cpu_s": self.cpu_s, "phase_s": self.phase_s, "carried_examples": self.carried}


RFT_FILE = "flywheel_rft.json"
"""In an RFT policy's folder: how it was made (config, counts, losses, the checkpoint it started from)."""


def run_rft(
    config: RftConfig,
    model_dir: str | Path,
    tasks: Sequence[Task],
    out_dir: str | Path,
    *,
    score_fn: ScoreFn | None = None,
    warehouse: str | Path | None = None,
    progress: Progress | None = None,
    sample_engine: Any = None,
    restart_from: str | Path | None = None,
) -> RftResult:
    """Fine-tune the checkpoint at `model_dir` on verified successes for `tasks`; save it to `out_dir`.
    With `restart_from` (the base model), `model_dir` (the champion) only samples: the fine-tuning starts
    from `restart_from`, on this run's examples and those `model_dir` was trained on (`carried_examples`).

    `score_fn` is the RL run's verifier entry point (default: the verifiers, as the trainer
    uses them); `warehouse` the DuckDB file whose `task_logs` hold logged responses (None or
    `include_logs=False`: the policy's samples only). `progress(phase, done, total)` is told
    how far candidate collection has got; `sample_engine` (`model_path -> engine`, e.g. vLLM's) draws
    the policy's samples (default: the torch engine over the loaded model). Raises ValueError when no candidate passes (there
    is nothing to fine-tune on, and a copy of the checkpoint is not a candidate).
    """
    import torch  # heavy: only a run needs it

    t0, c0 = time.perf_counter(), time.process_time()
    prev_threads = torch.get_num_threads()
    if config.num_threads:
        torch.set_num_threads(config.num_threads)
    try:
        device = resolve_device(GpuSpec(count=1), config.device)
        torch.manual_seed(config.seed)
        model, tokenizer = load_model(model_dir, device=device, dtype="float32")
        engine = sample_engine(str(model_dir)) if sample_engine else None
        formats = base_formats(model_dir)  # read once: the references use them, the policy's record keeps them
        try:
            examples, counts = collect_examples(
                config, model, tokenizer, tasks, score_fn or default_score_fn(),
                warehouse=warehouse if config.include_logs else None, device=device, progress=progress,
                engine=engine, formats=formats)
        finally:
            if engine is not None and hasattr(engine, "close"):
                engine.close()  # vLLM's workers hold memory the fine-tuning needs
        t1 = time.perf_counter()
        start_dir, carried = model_dir, 0
        if restart_from is not None:  # the samples were the champion's; the weights start from the base again
            examples, carried = union_examples(examples, carried_examples(model_dir))
            del model
            model, tokenizer = load_model(restart_from, device=device, dtype="float32")
            start_dir = restart_from
        if not examples:
            raise ValueError(f"RFT found no verified response to train on: {counts.to_dict()}")
        torch.manual_seed(config.seed)
        model = apply_lora(model, lora_of(config), start_dir).train()  # lora_rank 0: the model itself
        losses = supervised_finetune(model, tokenizer, [(e.domain, e.prompt, e.response) for e in examples],
                                     sft_config(config), placement_of(config, device), desc="RFT fine-tuning")
        t2 = time.perf_counter()
        out = Path(out_dir)
        result = RftResult(out, counts, losses, time.perf_counter() - t0, time.process_time() - c0, examples,
                           {"collect": t1 - t0, "sft": t2 - t1}, carried)
        save_rft_policy(model, tokenizer, out, config, result, start_dir, formats,
                        sampled_with=model_dir if restart_from is not None else None)
        result.wall_s, result.cpu_s = time.perf_counter() - t0, time.process_time() - c0
        return result
    finally:
        torch.set_num_threads(prev_threads)


def save_rft_policy(model: Any, tokenizer: Any, out: Path, config: RftConfig, result: RftResult,
                    model_dir: str | Path, formats: dict[str, str], sampled_with: str | Path | None = None) -> Path:
    """The HF folder, plus `flywheel_rft.json` (config, counts, losses: how it was made; `base_model` the
    checkpoint its fine-tuning started from, `sampled_with` the one that drew its samples when another) and
    `rft_dataset.jsonl` (exactly what it was trained on)."""
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    if is_lora(model):
        write_adapter_info(out, {"stage": "rft"})
    info = {"stage": "rft", "base_model": str(model_dir), "base_formats": formats,
            "config": config.to_dict(), **result.to_dict()}
    if sampled_with is not None:
        info["sampled_with"] = str(sampled_with)
    (out / RFT_FILE).write_text(json.dumps(info, indent=1, sort_keys=True, default=str))
    with (out / DATASET_FILE).open("w") as f:
        for e in result.examples:
            f.write(json.dumps(e.to_dict(), sort_keys=True) + "\n")
    return out


DATASET_FILE = "rft_dataset.jsonl"
"""In an RFT policy's folder: the examples it was trained on, one JSON object a line (`RftExample`)."""


def carried_examples(model_dir: str | Path) -> list[RftExample]:
    """The examples the checkpoint at `model_dir` was trained on (its `rft_dataset.jsonl`; a policy that
    restarted from the base holds those of the champion before it too); [] for a checkpoint without one."""
    path = Path(model_dir) / DATASET_FILE
    if not path.is_file():
        return []
    names = [f.name for f in fields(RftExample)]
    out = []
    with path.open() as f:
        for n, line in enumerate(f, 1):
            try:
                row = json.loads(line)
                out.append(RftExample(**{k: str(row[k]) for k in names}))
            except (ValueError, KeyError, TypeError) as e:
                raise ValueError(f"{path}:{n}: not an RFT example ({names}): {e}") from e
    return out


def union_examples(new: list[RftExample], old: list[RftExample]) -> tuple[list[RftExample], int]:
    """`new`, then the examples of `old` it does not already hold (the same prompt and response), and how many
    of those were added."""
    seen = {(e.prompt, e.response) for e in new}
    added = []
    for e in old:
        if (e.prompt, e.response) not in seen:
            seen.add((e.prompt, e.response))
            added.append(e)
    return [*new, *added], len(added)


def base_formats(model_dir: str | Path) -> dict[str, str]:
    """The SFT formats of the tiny base `model_dir` descends from (`math_format`, `agent_format` of its build
    recipe); {} for any other model. A champion several turns deep answers in its base's format: its references
    must too. Each RFT policy records them in its `flywheel_rft.json` (so a home moved elsewhere keeps them);
    a policy written before that is followed through its `base_model` back to the base."""
    here = Path(model_dir)
    for _ in range(64):  # a lineage is one step a turn
        if (here / RECIPE_FILE).is_file():
            recipe = json.loads((here / RECIPE_FILE).read_text())
            return {k: str(recipe[k]) for k in ("math_format", "agent_format") if k in recipe}
        made = json.loads((here / RFT_FILE).read_text()) if (here / RFT_FILE).is_file() else {}
        if isinstance(made.get("base_formats"), dict):
            return {k: str(v) for k, v in made["base_formats"].items()}
        parent = made.get("base_model")
        if not parent or Path(parent) == here:
            return {}
        here = Path(parent)
    return {}
