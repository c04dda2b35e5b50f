"""flywheel.sandbox: run untrusted Python with limits. `get_sandbox("local")` / `get_sandbox("docker")`.

Backends implement `Sandbox.run(code, files, limits, stdin, collect)` (see `base.py`);
`SandboxPool` (pool.py) adds a warm fork server, bounded concurrency and infra-fault retries.
"""

from __future__ import annotations

from typing import Any

from flywheel.sandbox.base import ExecResult, Limits, Sandbox, SandboxInfraError
from flywheel.sandbox.docker import DockerSandbox
from flywheel.sandbox.local import LocalSandbox
from flywheel.sandbox.pool import SandboxPool

__all__ = ["ExecResult", "Limits", "Sandbox", "SandboxInfraError", "get_sandbox", "get_pool"]


def get_sandbox(backend: str = "local", **kw: Any) -> Sandbox:
    """A sandbox of the named backend; keyword arguments go to its constructor."""
    if backend == "local":
        return LocalSandbox(**kw)
    if backend == "docker":
        return DockerSandbox(**kw)
    raise ValueError(f"unknown sandbox backend {backend!r} (local | docker)")


def get_pool(backend: str = "local", workers: int = 2, **kw: Any) -> SandboxPool:
    """A warm, bounded, retrying pool over `backend` (what the verifiers use)."""
    return SandboxPool(backend=backend, workers=workers, **kw)
