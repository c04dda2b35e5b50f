"""vLLM's OpenAI-compatible server for a checkpoint: the chat template, start, readiness, a clean stop.

- The chat template is the project's own (`flywheel.rollout.chat`): a served chat request is laid
  out exactly as the model was trained and evaluated. Written into the model folder as
  `chat_template.jinja`; the task's domain comes as `chat_template_kwargs={"domain": ...}`.
- The server runs as `python -m vllm.entrypoints.openai.api_server --model DIR ...` (the `vllm`
  console script of the CPU wheel is broken), in its own process group, bound to 127.0.0.1.
- Stopping stops the whole group: vLLM's engine and worker processes outlive the API server for
  20 s+ after its SIGTERM, so the group gets SIGTERM, then SIGKILL after a grace period, and
  `stop` returns the PIDs still alive (none, unless something is badly wrong).
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

from flywheel.registry.serving import CHAT_TEMPLATE_FILE
from flywheel.rollout.chat import ASSISTANT, EOS, USER

API_SERVER_MODULE = "vllm.entrypoints.openai.api_server"

CHAT_TEMPLATE = (
    "{%- set d = domain if domain is defined and domain else '' -%}"
    "{%- for m in messages -%}"
    "{%- if m['role'] == 'user' -%}"
    "{{- '" + USER + "' + ('[' + d + '] ' if d else '') + m['content'] + '\\n' -}}"
    "{%- elif m['role'] == 'assistant' -%}"
    "{{- '" + ASSISTANT + "' + m['content'] + '" + EOS + "' -}}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '" + ASSISTANT + "' -}}{%- endif -%}"
)
"""Jinja for `render_prompt`/`render_example`: user turns `<|user|>[domain] text\\n`, assistant turns
`<|assistant|>text<|end|>`; system messages are not part of the trained format and are left out."""


def write_chat_template(model_dir: str | Path) -> Path:
    """Write the project's chat template into the checkpoint folder (what the tokenizer and vLLM load)."""
    path = Path(model_dir) / CHAT_TEMPLATE_FILE
    path.write_text(CHAT_TEMPLATE)
    return path


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

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)

    @classmethod
    def from_json(cls, text: str) -> ServerInfo:
        return cls(**json.loads(text))


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
