"""vLLM servers started for model folders and stopped with their owner: traffic through a real serving interface.

Why: `flywheel serve` serves the champion by hand; a scheduled turn wants the same closed loop without a
person starting anything. `ManagedServers.engine(model_path)` starts vLLM's OpenAI-compatible server on
127.0.0.1 for the folder (the serving manifest's `default` variant for the device, the chat template
written beside the weights) and returns a `ServedEngine` that samples through the `openai` client; `close()`
stops every server it started, process group and all, and names any process left. The rollout-engine
resource uses it for `engine=vllm-server` and closes it when the step ends.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from flywheel.rollout.chat import write_chat_template
from flywheel.serving.vllm_server import ServedEngine, ServerInfo, free_port, start_server, stop_server


class ManagedServers:
    """One vLLM server per model folder, started on first use and stopped by `close()`."""

    def __init__(self, device: str = "cpu", log_dir: str | Path | None = None, python: str | None = None,
                 ready_timeout_s: float = 600.0, max_model_len: int | None = None) -> None:
        self.device, self.python, self.ready_timeout_s = device, python, ready_timeout_s
        self.max_model_len = max_model_len
        self.log_dir = Path(log_dir) if log_dir else Path(tempfile.mkdtemp(prefix="flywheel-vllm-"))
        self.servers: dict[str, ServerInfo] = {}

    def start(self, model_path: str | Path, served_name: str | None = None) -> ServerInfo:
        """The server for `model_path` (started now unless it already runs)."""
        from flywheel.gpu import GpuSpec
        from flywheel.registry.serving import serving_manifest

        key = str(Path(model_path).resolve())
        if key in self.servers:
            return self.servers[key]
        name = served_name or Path(key).name
        manifest = serving_manifest(key, name, GpuSpec(count=1 if self.device == "cuda" else 0), port=free_port(),
                                    device=self.device, max_model_len=self.max_model_len)
        write_chat_template(key)
        log = self.log_dir / f"vllm-{len(self.servers)}-{name.replace(':', '-')}.log"
        self.servers[key] = start_server(manifest["variants"]["default"]["args"], name, log, python=self.python,
                                         ready_timeout_s=self.ready_timeout_s)
        return self.servers[key]

    def engine(self, model_path: str) -> ServedEngine:
        """A `RolloutEngine` sampling `model_path` through its server (an `EngineSpec` for the responders)."""
        from flywheel.rollout.checkpoint import load_tokenizer

        info = self.start(model_path)
        return ServedEngine(info.base_url, info.served_model_name, load_tokenizer(model_path))

    def close(self) -> dict[str, list[int]]:
        """Stop every server; for each model folder, the PIDs still alive afterwards (want: all empty)."""
        left = {key: stop_server(info) for key, info in self.servers.items()}
        self.servers.clear()
        return left

    def __enter__(self) -> ManagedServers:
        return self

    def __exit__(self, *exc: Any) -> None:
        left = {k: v for k, v in self.close().items() if v}
        if left and exc[0] is None:
            raise RuntimeError(f"vLLM server processes still alive after stop: {left}")
