"""A batch of JSON lines made ready for the SQL checks: the lines JSON refuses (a bare `NaN` /
`Infinity`, which DuckDB's parser takes) taken out, and the lines that need Python
(`formats.needs_python`: other formats, content parts, refusals, tool calls not yet in their
canonical shape) rewritten as canonical records. What is not a record comes back as `Refused`
entries, which the loader turns into quarantine rows."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from flywheel.logs.arrow_ops import SCAN_CHUNK, query
from flywheel.logs.formats import Expanded, canonical_line, needs_python
from flywheel.logs.messages import RecordError


@dataclass(frozen=True)
class Refused:
    """A line (or array record) that is not a record: its number, quarantine kind, field, reason and text."""

    line_no: int
    kind: str
    field: str | None
    reason: str
    raw: str


@dataclass
class Canonical:
    """`canonical_batch`'s result: the batch to validate, what was refused (in line order), the lines as
    read where Python rewrote them, and the records read beyond one per line (a line holding several
    traces is several records)."""

    batch: pa.Table
    refused: list[Refused] = field(default_factory=list)
    originals: dict[int, str] = field(default_factory=dict)
    extra_records: int = 0


def drop_json_constants(batch: pa.Table, unit: str) -> tuple[pa.Table, list[Refused]]:
    """`batch` without the lines holding a bare `NaN` / `Infinity` (DuckDB's parser takes them; JSON
    does not), and those lines refused. An RE2 test picks the few lines that may hold one."""
    # one RE2 search per literal: each is a memchr scan, their alternation a DFA step per byte (10x slower)
    mask = pc.or_(pc.match_substring_regex(batch["line"], "NaN"), pc.match_substring_regex(batch["line"], "Infinity"))
    if not pc.any(mask).as_py():
        return batch, []
    bad, drop = [], []
    for n, line in zip(batch.filter(mask)["line_no"].to_pylist(), batch.filter(mask)["line"].to_pylist(),
                       strict=True):
        try:
            json.loads(line, parse_constant=_refuse_constant)
        except _JsonConstant as e:
            drop.append(n)
            bad.append(Refused(n, "invalid_json", None,
                               f"{unit} {n}: {e} is not valid JSON (write null, or the value as a string)", line))
        except (ValueError, RecursionError):
            pass  # other problems: the SQL checks name them
    if not drop:
        return batch, []
    return batch.filter(pc.invert(pc.is_in(batch["line_no"], pa.array(drop, pa.int64())))), bad


_CALLS_SHAPE = '{"messages":[{"tool_calls":[{"id":"JSON","type":"JSON","function":{"name":"JSON","arguments":"JSON"}}]}]}'
"""The parts of a line's tool calls the check reads, each as its JSON text (a string's starts with `"`)."""
_CALL_OK = ("""starts_with(c.id, '"') AND c.id <> '""' AND c.type = '"function"' AND starts_with(c.function.name, '"') """
            """AND c.function.name <> '""' AND (c.function.arguments IS NULL OR starts_with(c.function.arguments, '"'))""")
CANONICAL_CALLS_SQL = f"""
SELECT line_no FROM (
    SELECT line_no, TRY(json_transform(line, '{_CALLS_SHAPE}')).messages AS ms,
           TRY(json_type(line, '$.messages[*].tool_calls')) AS types FROM _t WHERE calls)
WHERE NOT coalesce(ms IS NOT NULL AND list_bool_and(list_transform(types, lambda t: coalesce(t IN ('ARRAY', 'NULL'), false))) IS NOT FALSE
                   AND list_bool_and(list_transform(flatten(list_transform(ms, lambda m: coalesce(m.tool_calls, []))),
                                                    lambda c: coalesce({_CALL_OK}, false))) IS NOT FALSE, false)
"""
"""Of the lines of `_t` (line_no, line, calls) marked `calls`, those whose tool calls Python must rewrite
(`messages.tool_call`): a call that is not an object with a non-empty string `id`, `type` "function"
and a `function` with a non-empty string `name` and string (or no) `arguments` -- object arguments, a
missing id, a call written as a string -- and `tool_calls` that is not a list. A line whose calls all
have that shape is taken by the SQL checks as written, as a line without calls is: its keys in their
order, a null-valued key kept (Python would drop it), an empty `tool_calls` kept. Two parses of the
line instead of a Python decode."""


def canonical_batch(batch: pa.Table, fmt: str, max_line_bytes: int, unit: str,
                    con: duckdb.DuckDBPyConnection) -> Canonical:
    """`batch` with the lines that need Python rewritten as canonical records (`formats.canonical_line`),
    and those that are not records of any format (or hold a malformed message) refused. Lines whose tool
    calls are already canonical (`CANONICAL_CALLS_SQL`, run on `con`) skip Python."""
    mask, calls = needs_python(batch["line"], fmt, max_line_bytes)
    if pc.any(calls).as_py():
        flagged = pa.table({"line_no": batch["line_no"], "line": batch["line"], "calls": calls})  # no copy of the text
        odd = query(con, CANONICAL_CALLS_SQL, _t=flagged)["line_no"]
        if len(odd):
            mask = pc.or_(mask, pc.is_in(batch["line_no"], odd.combine_chunks()))
    if not pc.any(mask).as_py():
        return Canonical(batch)
    slow = batch.filter(mask)
    res = Canonical(batch)
    nos, texts = [], []
    for n, line in zip(slow["line_no"].to_pylist(), slow["line"].to_pylist(), strict=True):
        out = canonical_line(line, fmt)
        if isinstance(out, Expanded):  # several traces in one line: one record each
            _expanded(res, n, line, out, unit, nos, texts)
            continue
        if isinstance(out, RecordError):
            where = f"field '{out.field}': " if out.field else ""
            res.refused.append(Refused(n, out.kind, out.field, f"{unit} {n}: {where}{out.why}", line))
            continue
        if out is not line:
            res.originals[n] = line
        nos.append(n)
        texts.append(out)
    done = pa.table({"line_no": pa.array(nos, pa.int64()), "line": pa.array(texts, pa.large_string())})
    t = pa.concat_tables([batch.filter(pc.invert(mask)), done])
    res.batch = pa.Table.from_batches(t.to_batches(max_chunksize=SCAN_CHUNK), schema=t.schema)
    return res


def _expanded(res: Canonical, n: int, line: str, out: Expanded, unit: str, nos: list[int], texts: list[str]) -> None:
    """The records of a line holding several traces, appended to `nos`/`texts` (all with its line
    number). Each trace counts as a record read; the traces that cannot be read are one refused
    entry (counted as one record) naming each."""
    errors = [e for e in out if isinstance(e, RecordError)]
    for text in out:
        if not isinstance(text, RecordError):
            nos.append(n)
            texts.append(text)
    res.originals[n] = line
    res.extra_records += len(out) - len(errors) + bool(errors) - 1
    if not errors:
        return
    why = "; ".join(f"field '{e.field}': {e.why}" if e.field else e.why for e in errors[:5])
    more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
    res.refused.append(Refused(n, errors[0].kind, errors[0].field,
                               f"{unit} {n}: {len(errors)} of its {len(out)} traces could not be read: {why}{more}",
                               line))


class _JsonConstant(ValueError):
    pass


def _refuse_constant(name: str) -> None:
    raise _JsonConstant(name)
