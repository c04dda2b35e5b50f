"""Multi-step coding sessions as logs: rollout text <-> OpenAI tool-call messages, and task log records.

A `repo` session in the logs is a design task log record with `domain` set to the environment's domain,
`messages` in OpenAI chat format (the assistant's `tool_calls` with JSON-string `arguments`, each
answered by a `tool` message), and `reference` the task's reference (`files`, `test_files`,
`hidden_tests`, `snapshot_sha256`, optional `fix`), so mining can rebuild the task
(`task_from_dict`) and `RepoEnvironment.verify` can replay the session. `gold_text` is the
reference's known fix as a training trajectory.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import Any

from flywheel.environments.repo.generator import render
from flywheel.environments.repo.spec import RepoSpec
from flywheel.environments.repo.tools import RepoState
from flywheel.environments.task import Task
from flywheel.environments.toolcalls import CALL_CLOSE, CALL_OPEN, RESULT_CLOSE, RESULT_OPEN, parse_call

_STEP_RE = re.compile(re.escape(CALL_OPEN) + r"(.*?)" + re.escape(CALL_CLOSE)
                      + r"(?:\s*" + re.escape(RESULT_OPEN) + r"(.*?)" + re.escape(RESULT_CLOSE) + r")?", re.S)


def to_messages(prompt: str, text: str) -> list[dict[str, Any]]:
    """The rollout text (`<tool_call>…</tool_call><tool_result>…</tool_result>` steps) as OpenAI messages."""
    msgs: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    pos = 0
    for i, m in enumerate(_STEP_RE.finditer(text), 1):
        lead = text[pos:m.start()].strip()
        call = parse_call(m.group(1))
        args = json.dumps(call.arguments) if not call.error else m.group(1)
        msgs.append({"role": "assistant", "content": lead or None, "tool_calls": [
            {"id": f"call_{i}", "type": "function", "function": {"name": call.name or "?", "arguments": args}}]})
        if m.group(2) is not None:
            msgs.append({"role": "tool", "tool_call_id": f"call_{i}", "content": m.group(2)})
        pos = m.end()
    tail = text[pos:].strip()
    if tail:
        msgs.append({"role": "assistant", "content": tail})
    return msgs


def gold_text(reference: dict[str, Any]) -> str:
    """The reference's known fix as a trajectory (write each fixed file, submit), or "" without a fix."""
    spec = RepoSpec.from_reference(reference)
    if not spec.fix:
        return ""
    calls = [("write_file", {"path": p, "content": c}) for p, c in sorted(spec.fix.items())] + [("submit", {})]
    return render(RepoState.start(spec.snapshot), calls)


def session_record(task: Task, messages: list[dict[str, Any]], model: str, outcome: dict[str, Any],
                   timestamp: dt.datetime | None = None) -> dict[str, Any]:
    """One task log record (the design's JSONL line) of a coding session on `task`."""
    ts = (timestamp or dt.datetime.now(dt.timezone.utc)).astimezone(dt.timezone.utc)
    return {"timestamp": ts.isoformat().replace("+00:00", "Z"), "task_id": task.task_id, "domain": task.domain,
            "model": model, "messages": messages, "outcome": outcome, "reference": task.reference}
