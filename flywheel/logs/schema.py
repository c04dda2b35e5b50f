"""The task log record: the single Arrow definition every stage reads and writes.

One record is one production interaction of a served model with a task. JSONL lines and
Parquet rows are both read into this schema. Nested, free-form parts (`messages`,
`outcome`, `reference`, extra fields) are stored as JSON text so that new keys never
break ingest and nothing a user logged is dropped.
"""

from __future__ import annotations

from flywheel.warehouse.tables import TASK_LOG_SCHEMA

KNOWN_DOMAINS: tuple[str, ...] = ("math", "code", "agent", "repo")

REQUIRED_FIELDS: tuple[str, ...] = ("timestamp", "task_id", "domain", "model", "messages", "outcome")
"""Fields a line must carry. `id` is optional: a content hash keys records without one."""

# the record's columns are the warehouse table's: declared once, in flywheel/warehouse/tables.py
__all__ = ["KNOWN_DOMAINS", "OUTCOME_KEYS", "REQUIRED_FIELDS", "TASK_LOG_SCHEMA"]

OUTCOME_KEYS: tuple[str, ...] = (
    "status",  # "success" | "failure" | "error" | "timeout" | "refused"
    "passed",  # bool: production's own judgement (tests passed, user accepted, goal reached)
    "tests",  # {"run": int, "passed": int} for code
    "user_feedback",  # "thumbs_up" | "thumbs_down" | None
    "error",  # error text / traceback when the task crashed
    "latency_ms",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
)
"""Keys `outcome` usually has. All optional: mining reads what is there."""
