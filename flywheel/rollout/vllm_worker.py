"""The vLLM worker extension that loads the trainer's weights into a running engine.

vLLM runs its model in worker processes: a closure cannot cross to them, tensors in RPC
arguments arrive as lists, and on CPU vLLM repacks linear weights into kernel layouts (the
checkpoint-shaped parameters are emptied), so `model.load_weights` from outside fails.
What works on CPU and GPU alike: the new weights travel as one safetensors byte blob, and
each worker hands them to its model runner's `reload_weights`, which redoes vLLM's own
checkpoint-to-kernel processing (a tied LM head is re-tied and reprocessed after it). Named in `LLM(worker_extension_cls=...)` by its qualified
name; vLLM mixes it into the worker class, so `self` is the worker.
"""

from __future__ import annotations

import time
from typing import Any

EXTENSION = "flywheel.rollout.vllm_worker.WeightSyncExtension"
"""The qualified name vLLM resolves in each worker process (`worker_extension_cls`)."""


def _retie_lm_head(model: Any) -> None:
    """A tied LM head shares the embedding, which the reload gave new data: point the head at it again
    and redo the head's processing (on CPU the head keeps a repacked copy that would stay stale)."""
    config = getattr(model, "config", None)
    head = getattr(model, "lm_head", None)
    embed = getattr(getattr(model, "model", None), "embed_tokens", None)
    if not getattr(config, "tie_word_embeddings", False) or head is None or embed is None:
        return
    head.weight = embed.weight
    method = getattr(head, "quant_method", None)
    if method is not None:
        method.process_weights_after_loading(head)


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
        _retie_lm_head(worker.model_runner.get_model())
        self.flywheel_version = int(version)
        return {"version": self.flywheel_version, "tensors": len(weights),
                "load_ms": round((time.perf_counter() - t0) * 1000, 2)}

    def flywheel_weights_version(self) -> int:
        """The version of the weights this worker holds (0: the checkpoint it started from)."""
        return self.flywheel_version
