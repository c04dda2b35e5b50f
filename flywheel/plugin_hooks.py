"""How the layers below the environments (task suites, the verifier registry) reach an installed
environment for a domain they do not build themselves.

Environments are plugins: the registry in `flywheel.environments` imports the task and verifier layers
(the built-in environments wrap them), so those layers must not import it back. They resolve a domain
beyond math/code/agent here, at call time, the way a plugin is found: by module name, loaded on first
use (`flywheel.environments.registry`), like the `flywheel.environments` entry points themselves.
"""

from __future__ import annotations

import importlib
from typing import Any

ENVIRONMENTS_MODULE = "flywheel.environments.registry"
PROTOCOL_MODULE = "flywheel.environments.base"


def environments() -> Any:
    """The process-wide environment registry (`flywheel.environments.registry.default_environments()`)."""
    return importlib.import_module(ENVIRONMENTS_MODULE).default_environments()


def environment_for(domain: str) -> Any:
    """The installed environment serving `domain`; raises `UnknownDomainError` (a KeyError) naming the known ones."""
    return importlib.import_module(ENVIRONMENTS_MODULE).environment_for(domain)


def reference_solution(domain: str, reference: dict[str, Any]) -> str:
    """An environment domain's gold response rebuilt from a logged task's reference ("" where the environment
    cannot: it has no `reference_solution`, or the reference carries no solution)."""
    fn = getattr(environment_for(domain), "reference_solution", None)
    return str(fn(reference) or "") if fn else ""


def task_from_dict(domain: str, task: dict[str, Any]) -> Any:
    """A `Task` of `domain` from the task dict verifiers carry (the environment protocol's reader)."""
    return importlib.import_module(PROTOCOL_MODULE).task_from_dict(domain, task)
