"""Which verifier judges which domain, and the shared instances the trainer and evaluation use.

`VerifierRegistry` holds one verifier per domain, from the installed environment serving it
(`flywheel.environments`): an environment that builds its verifier over shared infrastructure
(`make_verifier(registry)`: the warm `SandboxPool`, created on first use, `workers` wide, and the time
limits) gets that verifier; any other is judged through its `verify`, wrapped in `EnvironmentVerifier`,
whose version is the environment's: the verdict cache keys on it. `default_registry()` is the
process-wide one.

A registry not given its environments follows the process's installed ones: after
`reload_environments()` its verifiers are rebuilt from the new registry, and a domain it does not know
makes it look for `flywheel.environments` entry points installed since (at most once a second): a
plug-in pip-installed into the running process is found without a restart.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import threading
import time
from typing import Any, Protocol

from flywheel.environments.base import task_from_dict
from flywheel.environments.registry import BUILTIN, GROUP, default_environments, reload_environments
from flywheel.environments.verdict import TaskError, Verdict


class Verifier(Protocol):
    """A judge: `verify` never raises on model output (TaskError / infra errors only)."""

    name: str
    version: str

    def verify(self, task: dict[str, Any], response: Any) -> Verdict: ...


CODE_TIMEOUT_S = 6.0
"""Wall-clock limit of one code verification in the sandbox (the verifiers asset's default too)."""
MATH_TIMEOUT_S = 5.0
"""Deadline of one math answer check (parsing and comparing the expression; the verifiers asset's default too)."""


class VerifierRegistry:
    """Verifiers by domain. `sandbox`: what code runs in (default: a warm local `SandboxPool`)."""

    def __init__(self, sandbox: Any = None, workers: int | None = None, code_timeout_s: float = CODE_TIMEOUT_S,
                 math_timeout_s: float = MATH_TIMEOUT_S, environments: Any = None) -> None:
        self._sandbox = sandbox
        self._environments = environments
        self.workers = workers or max(2, os.cpu_count() or 2)
        self.code_timeout_s = code_timeout_s
        self.math_timeout_s = math_timeout_s
        self._verifiers: dict[str, Verifier] = {}
        self._lock = threading.Lock()
        self._own_pool = None
        self._built_from: Any = None  # the environment registry the cached verifiers were built from
        self._looked_at = 0.0

    RESCAN_S = 1.0
    """At most one look for newly installed plug-ins per this many seconds (an unknown domain in a batch
    of many lines costs one scan, not one each)."""

    def lazy_sandbox(self) -> Any:
        """The registry's sandbox, started on the first run through it (what `make_verifier` builds over)."""
        return _LazySandbox(self)

    def sandbox(self) -> Any:
        """The sandbox the code verifier uses (a warm pool is started on first use)."""
        with self._lock:
            if self._sandbox is None:
                from flywheel.sandbox import get_pool  # the warm pool starts on first use, not on import

                self._own_pool = self._sandbox = get_pool(workers=self.workers)
            return self._sandbox

    def environments(self) -> Any:
        """The environment registry domains come from: the one given, else the process's installed ones
        (`default_environments()`, asked each time: a `reload_environments()` is seen)."""
        return self._environments if self._environments is not None else default_environments()

    def get(self, domain: str) -> Verifier:
        envs = self.environments()
        if envs is not self._built_from:  # the installed environments were reloaded: rebuild verifiers
            with self._lock:
                if envs is not self._built_from:
                    self._verifiers, self._built_from = {}, envs
        v = self._verifiers.get(domain)
        if v is not None:
            return v
        # each domain's verifier (math-verify, the sandbox, the tool env) loads when first asked for
        try:
            env = envs.for_domain(domain)
        except KeyError as e:  # UnknownDomainError: the message names the installed domains
            if not self._newly_installed():
                raise TaskError(str(e)) from None
            return self.get(domain)  # the environments were reloaded: look again
        make = getattr(env, "make_verifier", None)  # a plug-in not built on BaseEnvironment may lack it
        v = (make(self) if make else None) or EnvironmentVerifier(env, domain)
        with self._lock:
            if self._built_from is not envs:
                return v
            return self._verifiers.setdefault(domain, v)

    def _newly_installed(self) -> bool:
        """True when a `flywheel.environments` entry point is installed that the current environment
        registry neither loaded nor reported broken (the installed environments are then reloaded).
        Only for a registry following the installed environments."""
        if self._environments is not None:
            return False
        with self._lock:
            now = time.monotonic()
            if now - self._looked_at < self.RESCAN_S:
                return False
            self._looked_at = now
            importlib.invalidate_caches()  # a package pip-installed into this process's path since it started
            found = {(ep.name, ep.value) for ep in importlib.metadata.entry_points(group=GROUP)}
        envs = self.environments()
        known = {(s.name, s.value) for s in envs.sources().values()} | set(BUILTIN.items())
        broken = envs.errors
        new = [ep for ep in found - known if not any(f"{ep[0]!r} = {ep[1]!r}" in e for e in broken)]
        if new:
            reload_environments()
        return bool(new)

    def version(self, domain: str) -> str:
        return self.get(domain).version

    def close(self) -> None:
        """Stop the pool this registry started (a sandbox passed in is the caller's to close)."""
        if self._own_pool is not None:
            self._own_pool.close()
            self._own_pool = self._sandbox = None


class EnvironmentVerifier:
    """An environment's `verify` as a `Verifier` of one domain: named by the domain, versioned by the
    environment (so bumping an environment's version makes its cached verdicts misses)."""

    def __init__(self, env: Any, domain: str) -> None:
        self.env = env
        self.name = domain

    @property
    def version(self) -> str:
        return str(self.env.version)

    def verify(self, task: dict[str, Any], response: Any) -> Verdict:
        if not isinstance(task, dict):
            raise TaskError(f"task must be a JSON object, got {type(task).__name__}")
        try:
            return self.env.verify(task_from_dict(self.name, task), response)
        except KeyError as e:  # the task lacks a field its environment needs: not the model's fault
            raise TaskError(f"{self.name}: task is missing field {e}") from None


class _LazySandbox:
    """Defers starting the pool until the first code verification."""

    def __init__(self, reg: VerifierRegistry) -> None:
        self._reg = reg

    def run(self, *args: Any, **kwargs: Any) -> Any:
        return self._reg.sandbox().run(*args, **kwargs)


_DEFAULT: VerifierRegistry | None = None
_DEFAULT_LOCK = threading.Lock()


def default_registry() -> VerifierRegistry:
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None:
            _DEFAULT = VerifierRegistry()
        return _DEFAULT


def get_verifier(domain: str) -> Verifier:
    """The default verifier of `domain`."""
    return default_registry().get(domain)
