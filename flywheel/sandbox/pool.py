"""SandboxPool: a warm sandbox with bounded concurrency and retries for infrastructure faults only.

`local`: one pre-warmed fork server (a zygote that already imported the common stdlib) makes a
monitor per execution (`clone()` straight into fresh namespaces, exactly as the one-shot path), so the
pool is faster without being weaker. `docker`: the same bound and retries around `DockerSandbox`.

Retries: `SandboxInfraError` (fork server died, engine hiccup) is retried up to `retries` times with
a short backoff, restarting the server if needed. A task's own failure (non-zero exit, timeout,
a limit hit) is a normal `ExecResult` and is never retried, so a slow or crashing program costs
one execution, not `retries + 1`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from flywheel.sandbox.base import ExecResult, Limits, SandboxInfraError
from flywheel.sandbox.docker import DockerSandbox
from flywheel.sandbox.local import LocalSandbox


class SandboxPool:
    """`run()` is thread-safe and blocks while `workers` executions are already in flight."""

    def __init__(
        self,
        backend: str = "local",
        workers: int = 2,
        limits: Limits | None = None,
        retries: int = 2,
        backoff_s: float = 0.05,
        warm: bool = True,
        **backend_kw: Any,
    ):
        if workers < 1:
            raise ValueError("workers must be >= 1")
        self.backend = backend
        self.workers = workers
        self.limits = limits or Limits()
        self.retries = retries
        self.backoff_s = backoff_s
        self._slots = threading.BoundedSemaphore(workers)
        self._stats_lock = threading.Lock()
        self.stats = {"executions": 0, "infra_retries": 0, "infra_failures": 0}
        self.sandbox: LocalSandbox | DockerSandbox
        if backend == "local":
            self.sandbox = LocalSandbox(limits=self.limits, warm=True, **backend_kw)
        elif backend == "docker":
            self.sandbox = DockerSandbox(limits=self.limits, **backend_kw)
        else:
            raise ValueError(f"unknown sandbox backend {backend!r} (local | docker)")
        if warm:
            self.warmup()

    def warmup(self) -> None:
        """Start the fork server (or check the engine) now rather than on the first run."""
        fn = getattr(self.sandbox, "warmup", None)
        if fn:
            fn()

    def run(
        self,
        code: str,
        files: dict[str, str | bytes] | None = None,
        limits: Limits | None = None,
        stdin: str = "",
        collect: tuple[str, ...] = (),
        **kw: Any,
    ) -> ExecResult:
        """Same contract as `Sandbox.run`; extra keywords (`argv`, `env`) go to the backend."""
        last: SandboxInfraError | None = None
        for attempt in range(self.retries + 1):
            with self._slots:
                try:
                    res = self.sandbox.run(code, files, limits or self.limits, stdin, collect, **kw)
                except SandboxInfraError as e:
                    last = e
                else:
                    with self._stats_lock:
                        self.stats["executions"] += 1
                    return res
            with self._stats_lock:
                self.stats["infra_retries" if attempt < self.retries else "infra_failures"] += 1
            time.sleep(self.backoff_s * (2**attempt))
        assert last is not None
        raise last

    def map(self, jobs: Iterable[Mapping[str, Any]]) -> list[ExecResult | SandboxInfraError]:
        """Run many `run(**job)` at the pool's concurrency; order kept; infra failures returned, not raised."""
        def one(job: Mapping[str, Any]) -> ExecResult | SandboxInfraError:
            try:
                return self.run(**job)
            except SandboxInfraError as e:
                return e

        with ThreadPoolExecutor(self.workers) as ex:
            return list(ex.map(one, list(jobs)))

    def close(self) -> None:
        fn = getattr(self.sandbox, "close", None)
        if fn:
            fn()

    def __enter__(self) -> SandboxPool:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
