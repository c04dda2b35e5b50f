"""Which environments are installed: discovered through the `flywheel.environments` entry-point group.

A package makes an environment available by declaring, in its `pyproject.toml`,

    [project.entry-points."flywheel.environments"]
    myenv = "my_package.env:MyEnvironment"

The target is an `Environment` class (built with no arguments), a zero-argument factory, or an
instance. flywheel's own environments (math, code, agent, reasoning-gym) are declared the same way,
and are also known without the installed metadata so a source checkout works. A plugin that fails
to import, build or pass the protocol's shape check is reported with its entry point (`name = value`
and the distribution it came from), never silently dropped; two environments claiming one domain
is an error naming both.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from flywheel.environments.adapters import adapt
from flywheel.environments.base import Environment
from flywheel.environments.boundary import IMPORT_DEADLINE_S, PluginError, within

GROUP = "flywheel.environments"
BUILTIN: dict[str, str] = {
    "math": "flywheel.environments.builtin:MathEnvironment",
    "code": "flywheel.environments.builtin:CodeEnvironment",
    "agent": "flywheel.environments.builtin:AgentEnvironment",
    "reasoning-gym": "flywheel.environments.reasoning_gym:ReasoningGymEnvironment",
    "repo": "flywheel.environments.repo.env:RepoEnvironment",
}
"""flywheel's own entry points (pyproject.toml declares the same), used when the metadata is absent."""

_REQUIRED = ("name", "version", "family", "domains", "tasks", "task_count", "tools", "reset", "step", "verify",
             "validation")


class EnvironmentLoadError(RuntimeError):
    """An environment could not be loaded as declared (the message names its entry point)."""


class UnknownDomainError(KeyError):
    """No installed environment serves the domain."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True)
class Source:
    """Where an environment came from: its entry point and distribution."""

    name: str
    value: str
    dist: str

    def __str__(self) -> str:
        return f"entry point {self.name!r} = {self.value!r} (group {GROUP!r}, distribution {self.dist})"


def _load_target(value: str) -> Any:
    module, _, attr = value.partition(":")
    obj = importlib.import_module(module)
    for part in filter(None, attr.split(".")):
        obj = getattr(obj, part)
    return obj


def build(obj: Any, src: Source) -> Environment:
    """An environment from an entry point's target (class, factory or instance), shape-checked."""
    try:
        if isinstance(obj, type) or (callable(obj) and not hasattr(obj, "verify")):
            env = obj()  # a class or a factory
        else:
            env = obj  # an instance
        env = adapt(env, src.name)  # a `verifiers` package or an Inspect task becomes an Environment
    except Exception as e:
        raise EnvironmentLoadError(f"{src}: building it failed: {type(e).__name__}: {e}") from e
    missing = [a for a in _REQUIRED if not hasattr(env, a)]
    if missing:
        raise EnvironmentLoadError(f"{src}: {type(env).__name__} is not an Environment: missing {missing}")
    for a in ("name", "version", "family"):
        if not isinstance(getattr(env, a), str) or not getattr(env, a):
            raise EnvironmentLoadError(f"{src}: {a!r} must be a non-empty string, got {getattr(env, a)!r}")
    try:
        doms = list(env.domains())
    except Exception as e:
        raise EnvironmentLoadError(f"{src}: domains() failed: {type(e).__name__}: {e}") from e
    bad = [d for d in doms if not isinstance(d, str) or not d or d != d.strip()]
    if not doms or bad:
        raise EnvironmentLoadError(f"{src}: domains() must be non-empty strings, got {bad or doms!r}")
    return env


def _load_one(src: Source, ep: Any) -> Environment:
    try:
        target = ep.load() if ep is not None else _load_target(src.value)
    except Exception as e:
        raise EnvironmentLoadError(f"{src}: import failed: {type(e).__name__}: {e}") from e
    return build(target, src)


class EnvironmentRegistry:
    """The installed environments and which one serves each domain.

    `environments`: use these instead of discovering (tests, embedding); otherwise the entry points
    of `GROUP` plus `BUILTIN` are loaded on first use. Broken plugins are kept in `errors`.
    """

    def __init__(self, environments: Iterable[Environment] | None = None) -> None:
        self._given = list(environments) if environments is not None else None
        self._lock = threading.Lock()
        self._envs: list[tuple[Environment, Source]] | None = None
        self._by_domain: dict[str, Environment] = {}
        self._errors: list[str] = []

    @property
    def errors(self) -> list[str]:
        """Why each broken plugin failed, naming its entry point (empty when all loaded)."""
        self._load()
        return list(self._errors)

    def _sources(self) -> list[tuple[Source, Any]]:
        eps = importlib.metadata.entry_points(group=GROUP)
        seen: dict[str, tuple[Source, Any]] = {}
        for name, value in BUILTIN.items():
            seen[value] = (Source(name, value, "flywheel (built in)"), None)
        for ep in sorted(eps, key=lambda e: (e.name, e.value)):
            dist = getattr(ep, "dist", None)
            src = Source(ep.name, ep.value, f"{dist.name} {dist.version}" if dist else "unknown")
            if ep.value in BUILTIN.values():
                continue  # flywheel's own, already listed
            seen[ep.value] = (src, ep)
        return list(seen.values())

    def _load(self) -> list[tuple[Environment, Source]]:
        with self._lock:
            if self._envs is not None:
                return self._envs
            envs: list[tuple[Environment, Source]] = []
            errors: list[str] = []
            if self._given is not None:
                for env in self._given:
                    envs.append((build(env, Source(getattr(env, "name", "?"), type(env).__name__, "given")),
                                 Source(env.name, type(env).__name__, "given")))
            else:
                for src, ep in self._sources():
                    try:  # under a deadline: a plug-in hanging at import or build is reported, not waited on
                        envs.append((within(functools.partial(_load_one, src, ep), IMPORT_DEADLINE_S, str(src),
                                            "import"), src))
                    except (EnvironmentLoadError, PluginError) as e:  # a broken plugin must not take the others down
                        errors.append(str(e))
            by_domain: dict[str, Environment] = {}
            owner: dict[str, Source] = {}
            for env, src in envs:
                for d in env.domains():
                    if d in by_domain:
                        errors.append(f"domain {d!r} is claimed twice: by {owner[d]} and by {src}; "
                                      f"the first is used")
                        continue
                    by_domain[d], owner[d] = env, src
            self._by_domain, self._errors, self._envs = by_domain, errors, envs
            return envs

    def environments(self) -> list[Environment]:
        return [e for e, _ in self._load()]

    def sources(self) -> dict[str, Source]:
        """Environment name -> where it was loaded from."""
        return {e.name: s for e, s in self._load()}

    def get(self, name: str) -> Environment:
        """The environment called `name`."""
        for e in self.environments():
            if e.name == name:
                return e
        raise UnknownDomainError(self._unknown("environment", name, [e.name for e in self.environments()]))

    def for_domain(self, domain: str) -> Environment:
        """The environment serving `domain`; UnknownDomainError naming the known ones (and any broken plugin)."""
        self._load()
        env = self._by_domain.get(domain)
        if env is None:
            raise UnknownDomainError(self._unknown("domain", domain, sorted(self._by_domain)))
        return env

    def has_domain(self, domain: str) -> bool:
        self._load()
        return domain in self._by_domain

    def domains(self) -> list[str]:
        """Every domain of every environment, in environment order."""
        self._load()
        return list(self._by_domain)

    def family_of(self, domain: str) -> str:
        return self.for_domain(domain).family

    def _unknown(self, what: str, name: str, known: list[str]) -> str:
        shown = ", ".join(known[:12]) + (f", ... ({len(known)} in all)" if len(known) > 12 else "")
        msg = f"unknown {what} {name!r}; known: {shown} (`flywheel envs list` shows them all)"
        if self._errors:
            msg += f"; {len(self._errors)} environment(s) failed to load: " + " | ".join(self._errors)
        return msg


_DEFAULT: EnvironmentRegistry | None = None
_DEFAULT_LOCK = threading.Lock()


def default_environments() -> EnvironmentRegistry:
    """The process-wide registry of installed environments."""
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None:
            _DEFAULT = EnvironmentRegistry()
        return _DEFAULT


def reload_environments() -> EnvironmentRegistry:
    """Forget what was discovered (after installing a plugin in this process) and discover again."""
    global _DEFAULT
    with _DEFAULT_LOCK:
        _DEFAULT = EnvironmentRegistry()
        return _DEFAULT


def environment_for(domain: str) -> Environment:
    """The installed environment serving `domain`."""
    return default_environments().for_domain(domain)


def all_domains() -> list[str]:
    return default_environments().domains()
