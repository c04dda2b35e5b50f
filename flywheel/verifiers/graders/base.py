"""What every grader kind shares: its settings (`GraderConfig`), what it is built with (`Runtime`), what one grade
returns (`Graded`) and the spec-field checks that refuse a malformed spec with the field named.

A grader's raw score lives in its own range (`low`..`high`: 0..1 for most, a `score_model`'s `range`); the
verifier maps it onto a reward in [0, 1]. A grade that could not be taken because of what the model answered
(the judge's reply did not parse, the python grader timed out on it) is the model's 0, flagged not cacheable.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from flywheel.config_fields import check_choices, option
from flywheel.environments.verdict import TaskError


@dataclass(frozen=True)
class GraderConfig:
    """Where the graders that need something outside this process find it, and their limits."""

    judge_base_url: str | None = option(
        None, "OpenAI-compatible endpoint serving score_model/label_model judges (None: the openai client's own "
              "default, OPENAI_BASE_URL or api.openai.com); the local engine's `flywheel serve` URL works too")
    judge_api_key_env: str = option("OPENAI_API_KEY", "environment variable holding the judge endpoint's key")
    judge_model: str | None = option(None, "judge every model grader with this model instead of the spec's `model`")
    judge_timeout_s: float = option(60.0, "seconds one judge request may take", gt=0)
    judge_seed: int = option(0, "sampling seed sent to the judge when the spec's sampling_params set none", ge=0)
    python_timeout_s: float = option(10.0, "wall-clock limit of one python grade in the sandbox", gt=0)
    python_memory_mb: int = option(512, "memory limit of one python grade in the sandbox", ge=64)
    default_pass_threshold: float = option(
        0.5, "reward (0..1) at or above which a continuous grader passes when its spec sets no pass_threshold",
        ge=0, le=1)
    partial_credit: bool = option(
        False, "below the pass threshold the reward is the grader's normalised score, kept under 1 (True), or 0 "
               "(False: binary rewards, as the validation of every verifier expects)")

    def __post_init__(self) -> None:
        check_choices(self)


class Runtime:
    """What graders are built with: the config and the sandbox python graders run in (started on first use)."""

    def __init__(self, config: GraderConfig | None = None, sandbox: Any = None) -> None:
        self.config = config or GraderConfig()
        self._sandbox = sandbox
        self._lock = threading.Lock()

    def sandbox(self) -> Any:
        with self._lock:
            if self._sandbox is None:
                from flywheel.sandbox import get_sandbox  # started when a python grader first runs

                self._sandbox = get_sandbox()
            return self._sandbox


@dataclass
class Graded:
    """One grade: the raw `score`, why, and whether it may be cached (a judge's garbled reply may not)."""

    score: float
    reason: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    cacheable: bool = True


def need(spec: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    """`spec[key]`, or TaskError naming the field when it is missing or of the wrong type."""
    if key not in spec or spec[key] is None:
        raise TaskError(f"{where}: missing field {key!r}")
    value = spec[key]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        want = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise TaskError(f"{where}: field {key!r} must be {want}, got {type(value).__name__}")
    return value


def threshold(spec: dict[str, Any], where: str) -> float | None:
    """The spec's `pass_threshold` (a finite number) or None."""
    t = spec.get("pass_threshold")
    if t is None:
        return None
    if isinstance(t, bool) or not isinstance(t, (int, float)) or t != t or t in (float("inf"), float("-inf")):
        raise TaskError(f"{where}: pass_threshold must be a finite number, got {t!r}")
    return float(t)
