"""What one ingest call is asked to do (`IngestOptions`) and what it did (`IngestReport`).

Kept apart from `ingest.py` so that the loader, which fills the report, and the entry point, which
creates both, import them from one place below them both.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field

from flywheel.config_fields import check_choices, option

FORMATS: tuple[str, ...] = ("auto", "flywheel", "openai", "sharegpt", "otel", "langfuse", "langsmith")
"""Values of `IngestOptions.format` (what each reads: `flywheel.logs.formats`)."""


def default_workers() -> int:
    """Arrow's kernels release the GIL, so up to 4 threads use the cores DuckDB leaves idle between queries."""
    return max(1, min(4, os.cpu_count() or 1))


@dataclass(frozen=True)
class IngestOptions:
    """Knobs of one ingest call; the defaults suit production logs."""

    max_field_bytes: int = field(default=1 << 20, metadata={"help": "a field larger than this is quarantined"})
    max_line_bytes: int = field(default=16 << 20, metadata={
        "help": "a line (or JSON array record) larger than this is quarantined unparsed, never held whole"})
    max_decompression_ratio: float = field(default=100.0, metadata={
        "help": "a compressed file expanding past this many times its size (at least 1 MiB) is cut there: "
                "the rest is one quarantine entry"})
    raw_preview_chars: int = field(default=2000, metadata={"help": "raw text kept per quarantined line"})
    parquet_batch_rows: int = field(default=262_144, metadata={"help": "rows per Parquet batch"})
    jsonl_chunk_bytes: int = field(default=64 << 20, metadata={"help": "bytes per JSONL chunk (one SQL query each)"})
    redact: bool = field(default=True, metadata={"help": "replace secrets and personal data"})
    workers: int = field(default_factory=default_workers,
                         metadata={"help": "threads for a batch's Arrow work (redaction prefilter, Parquet encoding)"})
    format: str = option("auto", "format of the JSON records: flywheel (the project's schema), openai (Chat "
                         "Completions request + response), sharegpt (conversations), otel (OTLP JSON GenAI spans, one trace per "
                         "record), langfuse (a trace with its observations), langsmith (a root run with its child_runs), "
                         "or auto (detected per record; "
                         "a record that fits no format, or several, is quarantined)", choices=FORMATS)

    def __post_init__(self) -> None:
        check_choices(self)
        for name in ("workers", "max_field_bytes", "max_line_bytes", "parquet_batch_rows", "jsonl_chunk_bytes"):
            if getattr(self, name) < 1:
                raise ValueError(f"IngestOptions.{name} must be >= 1, got {getattr(self, name)}")
        if not self.max_decompression_ratio >= 1:  # NaN too
            raise ValueError(f"IngestOptions.max_decompression_ratio must be >= 1, got {self.max_decompression_ratio}")
        if self.raw_preview_chars < 0:
            raise ValueError(f"IngestOptions.raw_preview_chars must be >= 0, got {self.raw_preview_chars}")


@dataclass
class IngestReport:
    """What one ingest call did. `lines_read == ingested + quarantined + duplicates`."""

    lines_read: int = 0
    ingested: int = 0
    quarantined: int = 0
    duplicates: int = 0
    redactions: int = 0
    by_reason: dict[str, int] = field(default_factory=dict)
    redactions_by_kind: dict[str, int] = field(default_factory=dict)
    prefilter_hits: int = 0  # kept rows the redaction prefilter flagged (each then redacted, cell by cell)
    redact_seconds: float = 0.0  # wall time in redaction (keys, prefilter, redacting the flagged cells)
    files: int = 0
    seconds: float = 0.0
    run_id: str = ""
    source: str = ""
    log_date: str | None = None

    @property
    def quarantine_rate(self) -> float:
        return self.quarantined / self.lines_read if self.lines_read else 0.0

    @property
    def balanced(self) -> bool:
        return self.lines_read == self.ingested + self.quarantined + self.duplicates

    def to_dict(self) -> dict:
        d = asdict(self)
        d["quarantine_rate"] = self.quarantine_rate
        return d
