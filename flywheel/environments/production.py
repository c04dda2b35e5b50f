"""What a domain contributes to the SIMULATED production world (`flywheel.world`): its users' system prompt,
its share of the day's traffic, how hard each task is for the made-up production model, and how that model
answers when it succeeds or fails in each way (real tracebacks included: the simulated failures are executed,
so the logged errors are what Python prints). The world drives; each environment says how its domain looks.

Nothing here is real user data or a real model, and none of it ever runs model output.
"""

from __future__ import annotations

import json
import linecache
import random
import re
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flywheel.environments.task import Task

Messages = list[dict[str, Any]]
Respond = Callable[[Task, str, random.Random], tuple[Messages, dict[str, Any]]]
"""`respond(task, mode, rng) -> (assistant-side messages, outcome)` for a failure mode or "success"."""


@dataclass(frozen=True)
class ProductionProfile:
    """How one domain shows up in simulated production.

    `share`: its share of the day's requests; `universe`: how many training tasks its traffic is drawn from
    (the same every day); `base_logit` and `difficulty(task)` (0 easy .. 1 hard) set the made-up model's
    success probability; `failure_weights`: how its failures split over the taxonomy's classes; `reword`:
    a near-duplicate of a prompt (None: the world's generic rewording).
    """

    system_prompt: str
    share: float
    universe: int
    base_logit: float
    failure_weights: dict[str, float]
    difficulty: Callable[[Task], float]
    respond: Respond
    reword: Callable[[str, random.Random], str] | None = field(default=None)


RUN_SLOT = "{RUN}"
REFUSALS = (
    "I'm sorry, but I can't help with that request.",
    "I am sorry, I cannot assist with this.",
    "Sorry, I can't do that.",
    "I cannot help with this request.",
)


def outcome(mode: str, **kw: Any) -> dict[str, Any]:
    status = {"success": "success", "runtime_error": "error", "timeout": "timeout", "refused": "refused"}
    return {"status": status.get(mode, "failure"), "passed": mode == "success", "error": None, **kw}



def compile_with_source(src: str, filename: str):
    """Compile `src` under a fake path and register its lines so tracebacks show source."""
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    return compile(src, filename, "exec")


def format_exc(e: BaseException, skip: int, prefix: str = "") -> str:
    tb = e.__traceback__
    for _ in range(skip):
        tb = tb.tb_next if tb is not None else None
    lines = traceback.format_exception(type(e), e, tb)
    return lines[0] + prefix + "".join(lines[1:])


_STDLIB = str(Path(json.__file__).resolve().parent.parent)
_CANON_STDLIB = f"/usr/lib/python{sys.version_info.major}.{sys.version_info.minor}"


def fill_run(tb: str, rng: random.Random) -> str:
    """Per-record details production tracebacks vary in: sandbox run folder, object addresses.

    The local interpreter's stdlib folder is replaced by a canonical one, so the same seed
    writes the same bytes on every machine with the same Python version.
    """
    tb = tb.replace(_STDLIB, _CANON_STDLIB).replace(RUN_SLOT, f"run_{rng.getrandbits(32):08x}")
    return re.sub(r"0x[0-9a-f]{6,}", lambda _: f"0x7f{rng.getrandbits(40):010x}", tb)
