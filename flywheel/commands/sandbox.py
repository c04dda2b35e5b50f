"""`flywheel sandbox exec FILE.py`: run untrusted Python in the sandbox and report what happened."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from flywheel.commands.argtypes import positive, positive_int
from flywheel.commands.output import EXIT_FAILED, EXIT_INFRA, EXIT_OK, add_json_flag, emit, fail, utf8_text


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("sandbox", help="run untrusted Python in the sandbox", description=__doc__)
    sub = p.add_subparsers(dest="sandbox_command", metavar="SUBCOMMAND")
    e = sub.add_parser("exec", help="run FILE.py isolated (no network, private fs, limits)",
                       description="Run FILE.py as main.py in a fresh sandbox. JSON: exit_code (the program's: "
                                   "-N when signal N ended it), stdout, stderr, timed_out, killed_reason "
                                   "(+ duration_s, truncated, backend). The command itself exits 0 when the "
                                   "program exited 0, 1 when it ran and exited non-zero or was killed, 2 on a "
                                   "usage error, 3 when the sandbox itself failed (never the program's code).")
    e.add_argument("file", metavar="FILE.py", help="the program to run")
    e.add_argument("--timeout", type=positive, default=None, metavar="S", help="wall-clock limit in seconds (default 10)")
    e.add_argument("--cpu", type=positive, default=None, metavar="S", help="CPU-time limit in seconds (default: --timeout)")
    e.add_argument("--memory", type=positive_int, default=None, metavar="MB", help="memory limit in MB (default 512)")
    e.add_argument("--backend", choices=("local", "docker"), default="local", help="sandbox backend (default local)")
    e.add_argument("--image", default=None, help="docker image (docker backend; default flywheel-sandbox:latest)")
    e.add_argument("--stdin", default=None, metavar="FILE", help="feed this file on stdin")
    add_json_flag(e)
    e.set_defaults(func=run_exec)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])


def run_exec(args: argparse.Namespace) -> int:
    # loaded when the command runs, so `flywheel --help` stays fast
    from flywheel.sandbox import Limits, SandboxInfraError, get_sandbox

    path = Path(args.file)
    if not path.is_file():
        return fail(f"no such file: {path}")
    limits = Limits()
    if args.timeout is not None:
        limits = replace(limits, wall_timeout_s=args.timeout, cpu_time_s=args.timeout)
    if args.cpu is not None:
        limits = replace(limits, cpu_time_s=args.cpu)
    if args.memory is not None:
        limits = replace(limits, memory_mb=args.memory)
    try:
        code, why = utf8_text(path.read_bytes())
        stdin, why_in = utf8_text(Path(args.stdin).read_bytes()) if args.stdin else ("", "")
    except OSError as e:
        return fail(f"cannot read {e.filename or args.file}: {e.strerror or e}")
    if code is None or stdin is None:
        return fail(f"{args.file}: {why}" if code is None else f"--stdin {args.stdin}: {why_in}")
    kw = {"image": args.image} if args.backend == "docker" and args.image else {}
    try:
        sb = get_sandbox(args.backend, **kw)
        res = sb.run(code, limits=limits, stdin=stdin)
    except SandboxInfraError as e:
        return fail(f"sandbox failed (infrastructure, safe to retry): {e}", EXIT_INFRA)
    finally:
        close = getattr(locals().get("sb"), "close", None)
        if close:
            close()
    out = {**res.to_dict(), "backend": args.backend}
    status = "ok" if res.exit_code == 0 else f"exit {res.exit_code}"
    if res.killed_reason:
        status += f", killed: {res.killed_reason}"
    text = (res.stdout + (res.stderr if res.stderr else "")).rstrip("\n")
    if sys.stdout.isatty() or not args.json:
        text = f"{text}\n[sandbox {args.backend}: {status}, {res.duration_s * 1000:.0f} ms]"
    emit(args, out, text)
    return program_status(res.exit_code)


def program_status(exit_code: int) -> int:
    """The command's exit code for a program that ran: 0 when it exited 0, else 1 (its own code is in the output),
    so no program can exit with the code that means the sandbox itself failed."""
    return EXIT_OK if exit_code == 0 else EXIT_FAILED
