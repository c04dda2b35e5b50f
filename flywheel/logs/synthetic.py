"""SIMULATED task logs at scale, for benchmarks: millions of schema-valid rows, built vectorized.

This is not the demo traffic generator (that one, in `flywheel/tasks/`, produces realistic tasks
with checkable answers). Rows here are shaped like production logs (chat messages as JSON text,
an outcome object, a reference) with seeded random content, so ingest and mining can be timed on
5 million rows in seconds. About 0.5% of rows carry an e-mail address or an API key, so redaction
has work to do.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

_DOMAINS = np.array(["math", "code", "agent"])
_MODELS = np.array(["tiny:v1", "tiny:v2"])
_PROMPTS = {
    "math": "A shop sells pencils at {a} cents each. How many cents do {b} pencils cost?",
    "code": "Write a Python function add_{a}(x) that returns x plus {b}.",
    "agent": "Book a table at restaurant {a} for {b} people using the tools.",
}
_STATUS = np.array(["success", "failure", "error", "timeout", "refused"])
_ERRORS = np.array([
    "",
    "wrong answer",
    "Traceback (most recent call last):\\n  File \\\"<sandbox>\\\", line 3, in f\\nZeroDivisionError: division by zero",
    "Traceback (most recent call last):\\n  File \\\"<sandbox>\\\", line 7, in g\\nKeyError: 'x'",
    "timed out after 10 s",
    "invalid tool call: unknown tool 'reserve'",
])
_PII = np.array(["", " Contact me at jane.doe@example.com.", " My key is sk-abcdefghijklmnopqrstuvwxyz0123."])


def _s(a: np.ndarray | pa.Array) -> pa.Array:
    """A string Arrow array from numbers or strings (Arrow casts, no Python objects)."""
    if isinstance(a, pa.Array):
        return a if pa.types.is_string(a.type) else a.cast(pa.string())
    return pa.array(a).cast(pa.string())


def _cat(*parts: object) -> pa.Array:
    """Element-wise string concatenation of arrays and scalars (vectorized)."""
    arrs = [p if isinstance(p, str) else _s(p) for p in parts]
    return pc.binary_join_element_wise(*arrs, "")


def _pick(idx: np.ndarray, choices: np.ndarray) -> pa.Array:
    """choices[idx] as an Arrow string array, via a dictionary (no per-row Python strings)."""
    return pa.DictionaryArray.from_arrays(pa.array(idx.astype(np.int32)), pa.array(list(choices))).cast(pa.string())


def synthetic_table(start: int, rows: int, seed: int) -> pa.Table:
    """Rows `start .. start+rows` of the seeded synthetic log (TASK_LOG_SCHEMA-compatible columns)."""
    rng = np.random.default_rng([seed, start])
    idx = np.arange(start, start + rows)
    dom_i = rng.integers(0, 3, rows)
    domain = _pick(dom_i, _DOMAINS)
    a, b = _s(rng.integers(2, 100, rows)), _s(rng.integers(2, 20, rows))
    task_no = _s(rng.zipf(1.3, rows) % 5000)
    by_domain = []
    for d in _DOMAINS:
        pre, mid_post = _PROMPTS[d].split("{a}")
        mid, post = mid_post.split("{b}")
        by_domain.append(_cat(pre, a, mid, b, post))
    dom = pa.array(dom_i)
    prompt = pc.if_else(pc.equal(dom, 0), by_domain[0], pc.if_else(pc.equal(dom, 1), by_domain[1], by_domain[2]))
    pii = _pick(np.where(rng.random(rows) < 0.005, rng.integers(1, 3, rows), 0), _PII)
    status_i = np.minimum(rng.geometric(0.55, rows) - 1, 4)
    passed = _pick((status_i == 0).astype(np.int32), np.array(["false", "true"]))
    err = _pick(np.where(status_i == 0, 0, rng.integers(1, len(_ERRORS), rows)), _ERRORS)
    answer = _s(rng.integers(2, 2000, rows))
    messages = _cat(
        '[{"role":"user","content":"', prompt, pii,
        '"},{"role":"assistant","content":"The answer is ', answer, '."}]',
    )
    outcome = _cat(
        '{"status":"', _pick(status_i, _STATUS), '","passed":', passed, ',"error":"', err,
        '","latency_ms":', _s(rng.integers(50, 5000, rows)),
        ',"prompt_tokens":', _s(rng.integers(20, 400, rows)),
        ',"completion_tokens":', _s(rng.integers(5, 800, rows)), "}",
    )
    reference = _cat('{"answer":"', answer, '"}')
    ts = np.datetime64("2026-12-01T00:00:00", "us") + (idx * 17_000).astype("timedelta64[us]")
    return pa.table({
        "id": _cat(f"sim-{seed}-", _s(idx)),
        "timestamp": pa.array(ts, pa.timestamp("us", tz="UTC")),
        "task_id": _cat(domain, "-", task_no),
        "domain": domain,
        "model": _pick(rng.integers(0, 2, rows), _MODELS),
        "messages": messages,
        "outcome": outcome,
        "reference": reference,
    })


def generate_parquet_logs(path: str | os.PathLike[str], rows: int, seed: int = 0, chunk_rows: int = 131_072) -> Path:
    """Write `rows` SIMULATED log rows to one Parquet file at `path` (streamed; memory stays flat)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    writer = None
    try:
        for start in range(0, rows, chunk_rows):
            t = synthetic_table(start, min(chunk_rows, rows - start), seed)
            if writer is None:
                writer = pq.ParquetWriter(path, t.schema, compression="zstd")
            writer.write_table(t, row_group_size=131_072)
    finally:
        if writer is not None:
            writer.close()
    return path
