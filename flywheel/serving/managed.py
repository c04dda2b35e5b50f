"""vLLM servers started for model folders and stopped with their owner: traffic through a real serving interface.

Why: `flywheel serve` serves the champion by hand; a scheduled turn wants the same closed loop without a
person starting anything. A LoRA adapter folder is served as its base with the adapter as a LoRA
module under the served name (`adapter_args`). `ManagedServers.engine(model_path)` starts vLLM's OpenAI-compatible server on
127.0.0.1 for the folder (the serving manifest's `default` variant for the device, the checkpoint's own
chat template written beside the weights) and returns a `ServedEngine` that samples through the `openai` client; `close()`
stops every server it started, process group and all, and names any process left. The rollout-engine
resource uses it for `engine=vllm-server` and closes it when the step ends; `flywheel serve` starts the
champion with the same `start_model_server`.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from flywheel.monitoring.weights import weights_hash
from flywheel.rollout.chat import write_chat_template
from flywheel.serving.vllm_server import ServedEngine, ServerInfo, free_port, start_server, stop_server


class VariantUnavailable(ValueError):
    """The serving manifest's variant does not run on the target device (fast is GPU-only)."""


def start_model_server(model_path: str | Path, served_name: str, device: str, log: str | Path, *, port: int = 0,
                       variant: str = "default", python: str | None = None, ready_timeout_s: float = 300.0,
                       max_model_len: int | None = None) -> ServerInfo:
    """vLLM's OpenAI server for `model_path` on 127.0.0.1 (`port` 0: a free one), started as the serving
    manifest's `variant` for `device` says, with the checkpoint's own chat template written beside the weights;
    returns once `/v1/models` answers (RuntimeError/TimeoutError otherwise, naming the log), reporting the
    fingerprint of the weights it loaded (`ServerInfo.weights_sha256`)."""
    from flywheel.gpu import GpuSpec
    from flywheel.registry.serving import serving_manifest

    manifest = serving_manifest(model_path, served_name, GpuSpec(count=1 if device == "cuda" else 0),
                                port=port or free_port(), device=device, max_model_len=max_model_len)
    chosen = manifest["variants"][variant]
    if not chosen["runs_on_target"]:
        raise VariantUnavailable(f"variant {variant!r} needs {' or '.join(chosen['requires'])}; the target is {device}")
    write_chat_template(model_path)
    digest = weights_hash(model_path) or ""  # the files the server loads, hashed before it loads them
    args = adapter_args(chosen["args"], served_name)  # a LoRA adapter folder: its base plus the adapter
    info = start_server(args, served_name, log, python=python, ready_timeout_s=ready_timeout_s)
    info.weights_sha256 = digest
    return info


def adapter_args(args: list[str], served_name: str) -> list[str]:
    """`vllm serve` arguments `args` (model folder first) as they are, or for a LoRA adapter folder: its
    full-weight base with LoRA enabled and the adapter as the LoRA module `served_name`, so requests name it as
    they would a model (the bare base answers as `<served_name>-base`); the chat template stays the adapter
    folder's. An adapter over another adapter is refused (merge it first: `merge_adapter`)."""
    from flywheel.rollout.adapters import ADAPTER_CONFIG, is_adapter_dir
    from flywheel.rollout.checkpoint import is_checkpoint_dir
    from flywheel.rollout.vllm_engine import vllm_lora_rank

    adapter = Path(args[0])
    if not is_adapter_dir(adapter):
        return list(args)
    cfg = json.loads((adapter / ADAPTER_CONFIG).read_text())
    base = str(cfg.get("base_model_name_or_path") or "")
    if not is_checkpoint_dir(base) or is_adapter_dir(base):
        raise ValueError(f"adapter {adapter}: its base {base!r} is not a full-weight checkpoint folder to serve; "
                         f"export a merged one with flywheel.train.common.lora.merge_adapter")
    out = [base, *args[1:]]
    out[out.index("--served-model-name") + 1] = f"{served_name}-base"
    return out + ["--enable-lora", "--max-lora-rank", str(vllm_lora_rank(int(cfg.get("r") or 8))),
                  "--lora-modules", f"{served_name}={adapter}"]


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
        key = str(Path(model_path).resolve())
        if key not in self.servers:
            name = served_name or Path(key).name
            log = self.log_dir / f"vllm-{len(self.servers)}-{name.replace(':', '-')}.log"
            self.servers[key] = start_model_server(key, name, self.device, log, python=self.python,
                                                   ready_timeout_s=self.ready_timeout_s,
                                                   max_model_len=self.max_model_len)
        return self.servers[key]

    def fingerprints(self) -> dict[str, str]:
        """served model name -> the fingerprint of the weights its server loaded."""
        return {info.served_model_name: info.weights_sha256 for info in self.servers.values()}

    def engine(self, model_path: str) -> ServedEngine:
        """A `RolloutEngine` sampling `model_path` through its server (an `EngineSpec` for the responders)."""
        from flywheel.rollout.checkpoint import load_tokenizer

        info = self.start(model_path)
        return ServedEngine(info.base_url, info.served_model_name, load_tokenizer(model_path))

    def close(self, check: bool = True) -> None:
        """Stop every server, process group and all; with `check`, a process still alive afterwards is a
        RuntimeError naming it (per model folder)."""
        left = {key: pids for key, info in self.servers.items() if (pids := stop_server(info))}
        self.servers.clear()
        if left and check:
            raise RuntimeError(f"vLLM server processes still alive after stop: {left}")

    def __enter__(self) -> ManagedServers:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close(check=exc[0] is None)
