"""The vLLM worker extension that loads the trainer's weights into a running engine.

vLLM runs its model in worker processes: a closure cannot cross to them, tensors in RPC
arguments arrive as lists, and on CPU vLLM repacks linear weights into kernel layouts (the
checkpoint-shaped parameters are emptied), so `model.load_weights` from outside fails.
What works on CPU and GPU alike: the new weights travel as one safetensors byte blob, and
each worker hands them to its model runner's `reload_weights`, which redoes vLLM's own
checkpoint-to-kernel processing. Named in `LLM(worker_extension_cls=...)` by its qualified
name; vLLM mixes it into the worker class, so `self` is the worker.
"""

from __future__ import annotations

import time
from typing import Any

EXTENSION = "flywheel.rollout.vllm_worker.WeightSyncExtension"
"""The qualified name vLLM resolves in each worker process (`worker_extension_cls`)."""


class WeightSyncExtension:
    """Methods added to every vLLM worker, called through `LLM.collective_rpc(name, args=...)`."""

    flywheel_version: int = 0

    def flywheel_load_weights(self, blob: bytes, version: int) -> dict[str, Any]:
        """Load HF-named weights from a safetensors `blob`, tag them `version`; report what was loaded."""
        from safetensors.torch import load

        t0 = time.perf_counter()
        weights = load(blob)
        worker: Any = self
        worker.reload_weights(weights_iterator=iter(weights.items()), is_checkpoint_format=True)
        self.flywheel_version = int(version)
        return {"version": self.flywheel_version, "tensors": len(weights),
                "load_ms": round((time.perf_counter() - t0) * 1000, 2)}

    def flywheel_weights_version(self) -> int:
        """The version of the weights this worker holds (0: the checkpoint it started from)."""
        return self.flywheel_version
