"""flywheel.sandbox: run untrusted Python with limits. `get_sandbox("local")` / `get_sandbox("docker")`.

Backends implement `Sandbox.run(code, files, limits, stdin, collect)` (see `base.py`);
`SandboxPool` (pool.py) adds a warm fork server, bounded concurrency and infra-fault retries.
"""

from __future__ import annotations

from typing import Any

from flywheel.sandbox.base import ExecResult, Limits, Sandbox, SandboxInfraError

__all__ = ["ExecResult", "Limits", "Sandbox", "SandboxInfraError", "get_sandbox", "get_pool"]


def get_sandbox(backend: str = "local", **kw: Any) -> Sandbox:
    """A sandbox of the named backend; keyword arguments go to its constructor."""
    if backend == "local":
        from flywheel.sandbox.local import LocalSandbox

        return LocalSandbox(**kw)
    if backend == "docker":
        from flywheel.sandbox.docker import DockerSandbox

        return DockerSandbox(**kw)
    raise ValueError(f"unknown sandbox backend {backend!r} (local | docker)")


def get_pool(backend: str = "local", workers: int = 2, **kw: Any):
    """A warm, bounded, retrying pool over `backend` (what the verifiers use)."""
    from flywheel.sandbox.pool import SandboxPool

    return SandboxPool(backend=backend, workers=workers, **kw)
