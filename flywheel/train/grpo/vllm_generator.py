"""Training rollouts sampled by vLLM: the trainer's `generator_factory` for `engine=vllm`.

vLLM keeps its own copy of the policy in its worker processes, so, unlike the torch
engine's shared mode, every policy version is pushed to it (`sync`): the weights travel
in memory as one safetensors blob (`VllmEngine.update_weights`), no checkpoint per step.
vLLM starts from a checkpoint folder, so the policy's starting weights are written once
to a temporary folder, removed at `close()`. A LoRA policy syncs its adapters alone: vLLM starts
from the frozen base weights with LoRA enabled, and each new version's adapter (a few MB) is saved
to that folder and sampled through a LoRA request, no merge per step. Everything else (prompts, tool environments,
grouping) is `PolicyGenerator`'s.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from flywheel.rollout.vllm_engine import VllmEngine
from flywheel.train.common.lora import is_lora, save_base
from flywheel.train.common.rollouts import GeneratorFactory, PolicyGenerator


class VllmGenerator(PolicyGenerator):
    """PolicyGenerator's interface (`engine.pad_id`, `version`, `sync`, `generate`, `close`) over vLLM."""

    def __init__(self, model: torch.nn.Module, tokenizer: Any, device: str | torch.device = "cpu",
                 shared: bool = True, **engine_kw: Any) -> None:
        self.shared = shared  # vLLM never shares the trainer's tensors: every version is synced
        self._dir = Path(tempfile.mkdtemp(prefix="flywheel-vllm-policy-"))
        try:
            if is_lora(model):  # vLLM holds the frozen base; the adapters travel per version
                save_base(model, self._dir)
                engine_kw = {"max_lora_rank": int(model.peft_config["default"].r), **engine_kw}
            else:
                model.save_pretrained(self._dir)
            tokenizer.save_pretrained(self._dir)
            dtype = str(next(model.parameters()).dtype).removeprefix("torch.")
            self.engine = VllmEngine.from_pretrained(self._dir, **{"dtype": dtype, **engine_kw})
        except BaseException:
            shutil.rmtree(self._dir, ignore_errors=True)
            raise
        self.version = 0
        self.sync_ms: list[float] = []
        self._synced_once = False

    def sync(self, module: torch.nn.Module, version: int) -> None:
        """Push the trainer's weights to vLLM when `version` is new (and once at the start: a resumed run)."""
        if self._synced_once and int(version) == self.version:
            return
        if is_lora(module):
            self._sync_adapter(module, int(version))
        else:
            self.engine.update_weights(module.state_dict(), version)
        self.sync_ms.append(float(self.engine.last_sync_ms or 0.0))
        self.version, self._synced_once = int(version), True

    def _sync_adapter(self, module: torch.nn.Module, version: int) -> None:
        """Save the adapters of `version` (only them) and point vLLM's requests at them; older ones removed."""
        t0 = time.perf_counter()
        folder = self._dir / "adapters" / f"v{version:06d}"
        module.save_pretrained(str(folder))  # a peft model saves its adapter alone
        self.engine.set_adapter(folder, version)
        for old in sorted((self._dir / "adapters").iterdir())[:-2]:  # the one in use and the one before
            shutil.rmtree(old, ignore_errors=True)
        self.engine.last_sync_ms = (time.perf_counter() - t0) * 1000

    def close(self) -> None:
        """Stop vLLM and remove the starting checkpoint it was built from."""
        try:
            self.engine.close()
        finally:
            shutil.rmtree(self._dir, ignore_errors=True)


def vllm_generator_factory(**engine_kw: Any) -> GeneratorFactory:
    """`(module, tokenizer, device, shared) -> VllmGenerator` with `engine_kw` for `VllmEngine.from_pretrained`."""

    def make(model: torch.nn.Module, tokenizer: Any, device: str | torch.device = "cpu",
             shared: bool = True) -> VllmGenerator:
        return VllmGenerator(model, tokenizer, device, shared, **engine_kw)

    return make
