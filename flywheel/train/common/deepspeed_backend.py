"""DeepSpeed update backend: the same methods as `TorchBackend`, with a ZeRO engine underneath.

Single process (CPU or one GPU) works without a launcher: this module sets up a
one-rank process group from `RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT` (defaults: rank 0
of 1 on a free loopback port) with `gloo` on CPU and `nccl` on CUDA. On CPU set
`DS_ACCELERATOR=cpu` before deepspeed is imported (done here when no CUDA GPU exists).
Multi-GPU runs go through the launcher, which sets those variables per rank:

    deepspeed --num_gpus 8 -m flywheel.cli train --backend deepspeed --zero-stage 2

Gradient accumulation is driven by the training loop (one micro-batch a step in fine-tuning): every micro-batch's loss is already
normalized by the whole step's token count, so DeepSpeed's own loss scaling is off
(`scale_wrt_gas=False`) and the accumulation boundary is set explicitly on the last
micro-batch, which makes one `step()` per RL update regardless of how many
micro-batches dynamic sampling left.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

import torch

from flywheel.train.common.optim import make_optimizer, make_scheduler
from flywheel.train.common.placement import Placement
from flywheel.train.common.schedule import OptimSpec
from flywheel.train.common.torch_backend import lm_loss_of, logits_of


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def prepare_single_process_env(device: str) -> None:
    """Rank 0 of 1 on loopback unless a launcher already set the variables."""
    if device == "cpu":
        os.environ.setdefault("DS_ACCELERATOR", "cpu")
    os.environ.setdefault("RANK", "0")
    os.environ.setdefault("LOCAL_RANK", "0")
    os.environ.setdefault("WORLD_SIZE", "1")
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(free_port()))
    os.environ.setdefault(
        "TORCH_EXTENSIONS_DIR", str(Path.home() / ".cache" / "flywheel" / "torch_extensions")
    )


def ds_config(optim: OptimSpec, placement: Placement, micro_batch_size: int) -> dict[str, Any]:
    """The DeepSpeed JSON config this run uses (also logged as an MLflow param)."""
    conf: dict[str, Any] = {
        "train_micro_batch_size_per_gpu": micro_batch_size,
        "gradient_accumulation_steps": 1,
        "gradient_clipping": float(optim.max_grad_norm),
        "zero_optimization": {"stage": int(placement.zero_stage)},
        "steps_per_print": 10**9,
        "wall_clock_breakdown": False,
    }
    if placement.device.startswith("cuda"):
        conf["bf16"] = {"enabled": bool(torch.cuda.is_bf16_supported())}
    return conf


class DeepSpeedBackend:
    """A DeepSpeed engine with the shared client AdamW and LR schedule (identical math to the torch backend)."""

    name = "deepspeed"

    def __init__(self, model: torch.nn.Module, optim: OptimSpec, placement: Placement, micro_batch_size: int) -> None:
        device = placement.device
        prepare_single_process_env(device)
        import deepspeed  # noqa: PLC0415 - heavy, and must see DS_ACCELERATOR first

        self.device = torch.device(device if device != "cuda" else f"cuda:{int(os.environ['LOCAL_RANK'])}")
        if self.device.type == "cuda":
            torch.cuda.set_device(self.device)
        if self.device.type == "cpu" and int(os.environ["WORLD_SIZE"]) == 1:  # set by prepare_single_process_env
            # its CPU comm backend JIT-compiles a shared-memory all-reduce op (~1 min on 2 cores, once per
            # machine) that only inference all-reduces across processes use: one process never does
            deepspeed.ops.__compatible_ops__["deepspeed_shm_comm"] = False
        if not torch.distributed.is_initialized():
            deepspeed.init_distributed(
                dist_backend="nccl" if self.device.type == "cuda" else "gloo", verbose=False
            )
        model = model.to(self.device)
        model.train()
        optimizer = make_optimizer(model, optim)
        lr_sched = make_scheduler(optimizer, optim)
        self.schedule = lr_sched.lr_lambdas[0]
        self.config = ds_config(optim, placement, micro_batch_size)
        self.engine, self.optimizer, _, self.lr_scheduler = deepspeed.initialize(
            model=model, optimizer=optimizer, lr_scheduler=lr_sched, config=self.config
        )
        self._micro = 0

    @property
    def module(self) -> torch.nn.Module:
        return self.engine.module

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return logits_of(self.engine, input_ids, attention_mask)

    def lm_loss(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return lm_loss_of(self.engine, input_ids, attention_mask, labels)

    def backward(self, loss: torch.Tensor) -> None:
        # Every backward but the step's last is a non-boundary: grads accumulate locally.
        self.engine.set_gradient_accumulation_boundary(False)
        self.engine.backward(loss, scale_wrt_gas=False)
        self._micro += 1

    def step(self) -> float:
        self.engine.set_gradient_accumulation_boundary(True)
        grads = [p.grad.detach().float().norm() for p in self.engine.module.parameters() if p.grad is not None]
        local = float(torch.norm(torch.stack(grads))) if grads else None  # stage 0/1: full grads live here
        # ZeRO reduces at the boundary; the engine clips and steps here.
        self.engine.step()
        self._micro = 0
        norm = self.engine.get_global_grad_norm()
        if norm is None:
            norm = local
        return float(norm) if norm is not None else float("nan")

    def skip(self) -> None:
        self.lr_scheduler.skip()

    def lr(self) -> float:
        return float(self.engine.get_lr()[0])

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.engine.save_checkpoint(str(folder / "deepspeed"), tag="latest", save_latest=False)

    def load(self, folder: Path) -> None:
        self.engine.load_checkpoint(
            str(folder / "deepspeed"), tag="latest", load_optimizer_states=True, load_lr_scheduler_states=True
        )
