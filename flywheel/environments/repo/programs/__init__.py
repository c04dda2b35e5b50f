"""The catalogue of correct small programs the generator injects defects into."""

from __future__ import annotations

from flywheel.environments.repo.programs import algorithms, calendar_stats, numeric, structures, text
from flywheel.environments.repo.programs.base import KINDS, Bug, Program, inject, stub

PROGRAMS: tuple[Program, ...] = (structures.PROGRAMS + numeric.PROGRAMS + algorithms.PROGRAMS + calendar_stats.PROGRAMS
                                  + text.PROGRAMS)
BY_NAME: dict[str, Program] = {p.name: p for p in PROGRAMS}

__all__ = ["BY_NAME", "KINDS", "PROGRAMS", "Bug", "Program", "inject", "stub"]
