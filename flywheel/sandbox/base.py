"""The sandbox interface: run untrusted Python, get back a small result.

Backends implement `Sandbox`: `local` (fresh Linux namespaces and rlimits, set up by the project's
own `_isolate.py`; no bubblewrap or other external tool) and `docker` (one throwaway container per
execution). What is contained and what is not is documented on each backend.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True)
class Limits:
    """Resource limits of one execution. Defaults fit a unit-test run of a small function."""

    wall_timeout_s: float = 10.0
    cpu_time_s: float = 10.0
    memory_mb: int = 512
    max_processes: int = 32
    max_open_files: int = 64
    max_file_size_mb: int = 16
    max_output_bytes: int = 1_000_000
    max_disk_mb: int = 64
    """Size of each private tmpfs (`/work`, `/tmp`): bounds what the code can write in total."""


@dataclass(frozen=True)
class ExecResult:
    """What an execution produced. `killed_reason` says which limit ended it, if any."""

    exit_code: int
    stdout: str
    stderr: str
    timed_out: bool = False
    killed_reason: str | None = None
    duration_s: float = 0.0
    files: dict[str, bytes] = field(default_factory=dict)
    truncated: bool = False
    """Captured output hit `max_output_bytes` and was cut (stderr ends with a note saying so)."""

    def to_dict(self) -> dict:
        return {
            "exit_code": self.exit_code,
            "stdout": self.stdout,
            "stderr": self.stderr,
            "timed_out": self.timed_out,
            "killed_reason": self.killed_reason,
            "duration_s": self.duration_s,
            "truncated": self.truncated,
        }


class SandboxInfraError(RuntimeError):
    """The sandbox itself failed (could not start, engine down, the machine starved the run of CPU
    until its wall clock ran out): safe to retry. Nothing the program does can raise it."""


class Sandbox(Protocol):
    """What every backend offers; the pool and the code verifier speak only to this."""

    def run(
        self,
        code: str,
        files: dict[str, str | bytes] | None = None,
        limits: Limits | None = None,
        stdin: str = "",
        collect: tuple[str, ...] = (),
        *,
        argv: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
    ) -> ExecResult:
        """Run `code` as `main.py` in a fresh work dir holding `files`; return `collect`ed files too.

        `argv` becomes `sys.argv[1:]`, `env` is added to the otherwise empty environment (both
        optional, keyword-only). A task's own failure is a result; `SandboxInfraError` means retry.
        """
        ...
