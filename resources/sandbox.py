"""SandboxPoolResource: where untrusted code runs (backend, concurrency, limits, docker image)."""

from __future__ import annotations

from typing import Any

import dagster as dg
from pydantic import Field, PrivateAttr

from flywheel.sandbox.base import Limits
from flywheel.sandbox.pool import SandboxPool


class SandboxPoolResource(dg.ConfigurableResource):
    """A warm `SandboxPool`; its fields are what a user edits. Built on first use, closed after the run."""

    backend: str = Field(default="local", description="local (namespaces, the default) or docker")
    workers: int = Field(default=2, ge=1, description="executions in flight at once")
    retries: int = Field(default=2, ge=0, description="retries of infrastructure faults (never of a task's own failure)")
    wall_timeout_s: float = Field(default=Limits.wall_timeout_s, gt=0, allow_inf_nan=False, description="wall-clock limit per execution")
    cpu_time_s: float = Field(default=Limits.cpu_time_s, gt=0, allow_inf_nan=False, description="CPU-time limit per process")
    memory_mb: int = Field(default=Limits.memory_mb, ge=1, description="memory limit (address space locally, cgroup in docker)")
    max_processes: int = Field(default=Limits.max_processes, ge=1, description="processes/threads per execution")
    max_open_files: int = Field(default=Limits.max_open_files, ge=1, description="open file descriptors per process")
    max_file_size_mb: int = Field(default=Limits.max_file_size_mb, ge=0, description="largest file the code may write")
    max_output_bytes: int = Field(default=Limits.max_output_bytes, ge=0, description="stdout+stderr kept; more is cut")
    max_disk_mb: int = Field(default=Limits.max_disk_mb, ge=1, description="size of the private /work and /tmp")
    docker_image: str = Field(default="flywheel-sandbox:latest", description="image for the docker backend")

    _pool: Any = PrivateAttr(default=None)

    def limits(self) -> Limits:
        return Limits(
            wall_timeout_s=self.wall_timeout_s, cpu_time_s=self.cpu_time_s, memory_mb=self.memory_mb,
            max_processes=self.max_processes, max_open_files=self.max_open_files,
            max_file_size_mb=self.max_file_size_mb, max_output_bytes=self.max_output_bytes,
            max_disk_mb=self.max_disk_mb,
        )

    def get_pool(self) -> SandboxPool:
        """The (lazily started) `flywheel.sandbox.pool.SandboxPool`."""
        if self._pool is None:
            kw = {"image": self.docker_image} if self.backend == "docker" else {}
            self._pool = SandboxPool(backend=self.backend, workers=self.workers, limits=self.limits(),
                                     retries=self.retries, warm=False, **kw)
        return self._pool

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None


def default_resources() -> dict[str, Any]:
    return {"sandbox": SandboxPoolResource()}
