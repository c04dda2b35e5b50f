"""Traces from observability tools as log formats: OpenTelemetry GenAI spans in OTLP JSON (`otel.py`), Langfuse
traces (`langfuse.py`) and LangSmith run trees (`langsmith.py`), each trace -> one task-log record (the mapping
tables are in docs/ingest.md).

`detect(rec)` names the trace formats a decoded record fits (format detection in `flywheel.logs.formats` asks
it first); `CONVERT` maps each format to its converter, which raises `RecordError` naming the field when the
record cannot be read; `SPLIT` cuts a record holding several traces (an OTLP export) into one per trace.
"""

from __future__ import annotations

from typing import Any

from flywheel.logs.traces import langfuse, langsmith, otel

CONVERT = {"otel": otel.convert, "langfuse": langfuse.convert, "langsmith": langsmith.convert}
SPLIT = {"otel": otel.split}
"""Formats whose one record may hold several traces: the splitter returns one record per trace."""
TRACE_FORMATS = tuple(CONVERT)
NEEDS_PYTHON = r'"resourceSpans"|"observations"|"run_type"'
"""Lines matching this (RE2) may be traces: they go through Python, not the SQL fast path."""


def detect(rec: dict[str, Any]) -> list[str]:
    """The trace formats `rec` fits (by their defining keys)."""
    fits = []
    if "resourceSpans" in rec:
        fits.append("otel")
    if "observations" in rec:
        fits.append("langfuse")
    if "run_type" in rec and ("inputs" in rec or "child_runs" in rec):
        fits.append("langsmith")
    return fits
