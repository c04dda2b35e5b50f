"""The task log record: the single Arrow definition every stage reads and writes.

One record is one production interaction of a served model with a task. JSONL lines and
Parquet rows are both read into this schema. Nested, free-form parts (`messages`,
`outcome`, `reference`, extra fields) are stored as JSON text so that new keys never
break ingest and nothing a user logged is dropped.
"""

from __future__ import annotations

import pyarrow as pa

KNOWN_DOMAINS: tuple[str, ...] = ("math", "code", "agent", "repo")

REQUIRED_FIELDS: tuple[str, ...] = ("timestamp", "task_id", "domain", "model", "messages", "outcome")
"""Fields a line must carry. `id` is optional: a content hash keys records without one."""

TASK_LOG_SCHEMA = pa.schema(
    [
        pa.field("id", pa.string(), nullable=False, metadata={"doc": "record id; content hash when missing"}),
        pa.field("timestamp", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("task_id", pa.string(), nullable=False),
        pa.field("domain", pa.string(), nullable=False, metadata={"doc": "math | code | agent | ..."}),
        pa.field("model", pa.string(), nullable=False, metadata={"doc": "name:version that served it"}),
        pa.field("messages", pa.string(), nullable=False, metadata={"doc": "JSON: OpenAI chat messages"}),
        pa.field("outcome", pa.string(), nullable=False, metadata={"doc": "JSON: what production observed"}),
        pa.field("reference", pa.string(), nullable=True, metadata={"doc": "JSON: answer / tests / goal"}),
        pa.field("extra", pa.string(), nullable=True, metadata={"doc": "JSON: unknown top-level fields, kept"}),
    ]
)
"""Columns of `raw_task_logs` and `task_logs`, before the warehouse's bookkeeping columns."""

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
