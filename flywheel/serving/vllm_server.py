"""vLLM's OpenAI-compatible server for a checkpoint: the chat template, start, readiness, a clean stop.

- The chat template is the checkpoint's own (`flywheel.rollout.chat.write_chat_template`: a brought
  Qwen or Llama keeps its template; the tiny models ship the project's), so a served chat request is laid
  out exactly as the model is trained and evaluated. Written into the model folder as `chat_template.jinja`;
  the task's domain comes as `chat_template_kwargs={"domain": ...}` (a template without it ignores it).
- The server runs as `python -m vllm.entrypoints.openai.api_server --model DIR ...` (the `vllm`
  console script of the CPU wheel is broken), in its own process group, bound to 127.0.0.1.
- Stopping stops the whole group: vLLM's engine and worker processes outlive the API server for
  20 s+ after its SIGTERM, so the group gets SIGTERM, then SIGKILL after a grace period, and
  `stop` returns the PIDs still alive (none, unless something is badly wrong).
- `ServedEngine` is the client side: a `RolloutEngine` whose samples come from the endpoint through the
  `openai` client, so the champion responder and a production day can send real traffic to it.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from flywheel.rollout.chat import CHAT_TEMPLATE, CHAT_TEMPLATE_FILE, write_chat_template  # noqa: F401 (re-exported)

API_SERVER_MODULE = "vllm.entrypoints.openai.api_server"
DETACHED_STATE = Path("serving") / "server.json"
"""Where `flywheel serve --detach` records its server, under the storage home."""

def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on right now."""
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def server_command(args: list[str], python: str | None = None) -> list[str]:
    """The argv that runs vLLM's API server for `vllm serve` arguments (`args[0]` is the model folder)."""
    return [python or sys.executable, "-m", API_SERVER_MODULE, "--model", args[0], *args[1:]]


def group_pids(pgid: int) -> list[int]:
    """Live (non-zombie) processes of process group `pgid`, from /proc."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()  # after "pid (comm) ": state, ppid, pgrp, ...
        if int(fields[2]) == pgid and fields[0] != "Z":
            out.append(int(d.name))
    return sorted(out)


def pid_alive(pid: int) -> bool:
    """True while `pid` exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2:].split()[0] != "Z"


def stop_group(pgid: int, grace_s: float = 15.0, kill_wait_s: float = 10.0) -> list[int]:
    """SIGTERM the group, SIGKILL what is left after `grace_s`; the PIDs still alive after that (want: [])."""
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, kill_wait_s)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return []
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if not group_pids(pgid):
                return []
            time.sleep(0.2)
    return group_pids(pgid)


@dataclass
class ServerInfo:
    """A started server: enough to find, use and stop it later (saved as JSON by `flywheel serve --detach`)."""

    pid: int
    pgid: int
    base_url: str
    served_model_name: str
    model_path: str
    log_path: str
    argv: list[str]
    weights_sha256: str = ""  # fingerprint of the weights it was started on (flywheel.monitoring.weights)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)

    @classmethod
    def from_json(cls, text: str) -> ServerInfo:
        return cls(**json.loads(text))


def detached_server_fingerprint(home: str | Path) -> dict[str, str | None]:
    """{"flywheel serve <model>": the weights fingerprint it reported} for a detached server still running under
    `home`; {} when none runs."""
    state = Path(home) / DETACHED_STATE
    if not state.is_file():
        return {}
    info = ServerInfo.from_json(state.read_text())
    return {f"flywheel serve {info.served_model_name}": info.weights_sha256 or None} if pid_alive(info.pid) else {}


def _ready(base_url: str) -> bool:
    try:
        with urllib.request.urlopen(base_url.rstrip("/") + "/models", timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


def _tail(path: str | Path, n: int = 20) -> str:
    try:
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return ""


def start_server(args: list[str], served_model_name: str, log_path: str | Path, python: str | None = None,
                 ready_timeout_s: float = 300.0, env: dict[str, str] | None = None) -> ServerInfo:
    """Start vLLM's API server with `vllm serve` arguments (model folder first, `--host`/`--port` in them),
    in a new process group; return once `/v1/models` answers. On failure the group is stopped and the
    error names the log's last lines."""
    host = args[args.index("--host") + 1] if "--host" in args else "127.0.0.1"
    port = args[args.index("--port") + 1] if "--port" in args else "8000"
    base_url = f"http://{host}:{port}/v1"
    argv = server_command(args, python)
    log = Path(log_path)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as f:
        proc = subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, env={**os.environ, **(env or {})})
    info = ServerInfo(proc.pid, proc.pid, base_url, served_model_name, args[0], str(log), argv)
    deadline = time.monotonic() + ready_timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            stop_group(info.pgid, grace_s=2)
            raise RuntimeError(f"vLLM server exited with {proc.returncode} before it was ready; {log}:\n{_tail(log)}")
        if _ready(base_url):
            return info
        time.sleep(1.0)
    stop_server(info)
    raise TimeoutError(f"vLLM server not ready after {ready_timeout_s:.0f}s; {log}:\n{_tail(log)}")


def stop_server(info: ServerInfo, grace_s: float = 15.0) -> list[int]:
    """Stop the server's whole process group; the PIDs still alive afterwards (want: [])."""
    left = stop_group(info.pgid, grace_s=grace_s)
    try:  # reap the server itself where it is our child (else it stays a zombie until we exit)
        os.waitpid(info.pid, os.WNOHANG)
    except ChildProcessError:
        pass
    return left


class ServedEngine:
    """A `RolloutEngine` over a served endpoint, through the `openai` client: production traffic as a real client.

    Each context goes to `/v1/completions` as token ids (vLLM accepts them), one request per sample, sent
    concurrently so the server batches them; the sampled ids come back as `token_id:N` strings
    (`return_tokens_as_token_ids`). The multi-step tool loop runs here, client-side, as with the in-process
    engines. Weights change only by serving another model: `update_weights` refuses.
    """

    name = "vllm-server"

    def __init__(self, base_url: str, model: str, tokenizer: Any, timeout_s: float = 120.0, concurrency: int = 16):
        import openai  # a dependency of vLLM; needed only by clients of a served endpoint

        self.client = openai.OpenAI(base_url=base_url, api_key=os.environ.get("OPENAI_API_KEY", "unused"),
                                    timeout=timeout_s)
        self.model, self.tokenizer, self.concurrency = model, tokenizer, concurrency
        self.policy_version = 0
        self.device = "cpu"  # where multistep's torch.Generator lives; requests carry their own seeds
        self.eos_id: int = tokenizer.eos_token_id
        self.pad_id: int = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else self.eos_id
        self._calls = 0

    def update_weights(self, state_dict: Any, version: int) -> None:
        raise NotImplementedError("a served endpoint's weights change by serving another model (flywheel serve)")

    def _one(self, ids: list[int], sampling: Any, budget: int, stop_ids: set[int], stop: list[str],
             seed: int) -> Any:
        from flywheel.rollout.torch_engine import Sample

        r = self.client.completions.create(
            model=self.model, prompt=ids, max_tokens=max(1, budget), temperature=sampling.temperature,
            top_p=sampling.top_p, seed=seed, logprobs=1, stop=stop or None,
            extra_body={"stop_token_ids": sorted(stop_ids | {self.eos_id}), "include_stop_str_in_output": True,
                        "skip_special_tokens": False, "return_tokens_as_token_ids": True})
        c = r.choices[0]
        toks = [int(t.split(":", 1)[1]) for t in (c.logprobs.tokens if c.logprobs else [])]
        lps = [float(x or 0.0) for x in (c.logprobs.token_logprobs if c.logprobs else [])]
        return Sample(toks, lps, "length" if c.finish_reason == "length" else "stop")

    def sample_ids(self, contexts: Any, sampling: Any, max_new_tokens: Any = None, stop_token_ids: Any = None,
                   stop_strings: Any = (), generator: Any = None) -> list[Any]:
        """Same contract as the in-process engines' `sample_ids` (one request per context)."""
        from concurrent.futures import ThreadPoolExecutor

        n = len(contexts)
        budgets = ([sampling.max_new_tokens if max_new_tokens is None else max_new_tokens] * n
                   if max_new_tokens is None or isinstance(max_new_tokens, int) else list(max_new_tokens))
        stops = stop_token_ids if isinstance(stop_token_ids, (list, tuple)) else [set(stop_token_ids or ())] * n
        call, self._calls = self._calls, self._calls + 1
        seeds = [(sampling.seed * 1_000_003 + call * 10_007 + i) % (2**31) for i in range(n)]
        with ThreadPoolExecutor(max_workers=max(1, min(self.concurrency, n))) as pool:
            return list(pool.map(lambda i: self._one(list(contexts[i]), sampling, budgets[i], set(stops[i]),
                                                     list(stop_strings), seeds[i]), range(n)))

    def generate(self, prompts: Any, n_samples: int = 1, sampling: Any = None, tools: Any = None,
                 max_steps: int = 1) -> list[Any]:
        """`RolloutEngine.generate` through the endpoint (prompt-major; tools run client-side)."""
        from flywheel.rollout.multistep import multistep_generate
        from flywheel.rollout.types import SamplingParams

        self._calls = 0
        tl = list(tools) if tools is not None else [None] * len(prompts)
        return multistep_generate(self, prompts, n_samples, sampling or SamplingParams(), tl, max(1, max_steps))

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def decode_response(self, token_ids: Any) -> str:
        ids = list(token_ids)
        if ids and ids[-1] == self.eos_id:
            ids = ids[:-1]
        return self.tokenizer.decode(ids, skip_special_tokens=False)


def served_engine(base_url: str, model: str) -> Any:
    """An `EngineSpec` (`model_path -> engine`) for the endpoint: the champion responder and the production
    day (`serve_production_day(..., engine=served_engine(url, name))`) then send their traffic through it."""

    def make(model_path: str) -> ServedEngine:
        from flywheel.rollout.checkpoint import load_tokenizer

        return ServedEngine(base_url, model, load_tokenizer(model_path))

    return make
