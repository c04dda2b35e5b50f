"""Which JSON lines Python rewrites before the SQL checks (`flywheel.logs.normalize`): a line whose tool
calls are already canonical skips Python, and only when Python would store the same messages."""

from __future__ import annotations

import itertools
import json

import duckdb
import pyarrow as pa
import pytest

from flywheel.logs.arrow_ops import query
from flywheel.logs.formats import canonical_line
from flywheel.logs.normalize import CANONICAL_CALLS_SQL, canonical_batch

CALL = {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "rain"}'}}

CANONICAL = [  # Python stores the same messages (up to key order and null-valued keys)
    [{"role": "assistant", "content": None, "tool_calls": [CALL]}],
    [{"role": "user", "content": "weather?"}, {"role": "assistant", "content": "", "tool_calls": [CALL, {**CALL, "id": "b"}]},
     {"role": "tool", "tool_call_id": "call_1", "content": "rain"}],
    [{"role": "assistant", "content": None, "tool_calls": [{**CALL, "function": {"name": "now"}}]}],  # no arguments
    [{"role": "assistant", "content": None, "tool_calls": [{**CALL, "index": 0}]}],  # keys beyond the shape
    [{"role": "user", "content": "é \u2603 \"tool_calls\""}],  # the word in a text only
    [{"role": "assistant", "tool_calls": [CALL]}],  # no content: Python adds a null one
    [{"content": None, "tool_calls": [CALL], "role": "assistant"}],  # Python puts role and content first
    [{"role": "assistant", "content": None, "tool_calls": []}],
    [{"role": "assistant", "content": None, "tool_calls": None}],
    [{"role": "assistant", "content": None, "tool_calls": [{**CALL, "index": None}]}],
    [{"role": "assistant", "content": None, "tool_calls": [{**CALL, "function": {"name": "f", "arguments": None}}]}],
    [{"role": "assistant", "content": None, "name": None, "tool_calls": [{"type": "function", **CALL}]}],
]
ODD = [  # Python writes these differently, or refuses them
    [{"role": "assistant", "content": None, "tool_calls": [{**CALL, "function": {"name": "f", "arguments": {"q": 1}}}]}],
    [{"role": "assistant", "content": None, "tool_calls": [{**CALL, "id": ""}]}],
    [{"role": "assistant", "content": None, "tool_calls": [{**CALL, "id": 7}]}],
    [{"role": "assistant", "content": None, "tool_calls": [{**CALL, "id": None}]}],
    [{"role": "assistant", "content": None, "tool_calls": [{**CALL, "type": "tool"}]}],
    [{"role": "assistant", "content": None, "tool_calls": [{**CALL, "function": {"arguments": "{}"}}]}],
    [{"role": "assistant", "content": None, "tool_calls": [{**CALL, "function": {"name": "", "arguments": "{}"}}]}],
    [{"role": "assistant", "content": None, "tool_calls": [{**CALL, "function": "lookup"}]}],
    [{"role": "assistant", "content": None, "tool_calls": [{**CALL, "function": None}]}],
    [{"role": "assistant", "content": None, "tool_calls": [{**CALL, "function": {"name": "f", "arguments": 5}}]}],
    [{"role": "assistant", "content": None, "tool_calls": ["call_1"]}],
    [{"role": "assistant", "content": None, "tool_calls": [CALL, None]}],
    [{"role": "assistant", "content": None, "tool_calls": {"0": CALL}}],
    [{"role": "assistant", "content": None, "tool_calls": "call_1"}],
]


def _line(messages: list[dict]) -> str:
    return json.dumps({"timestamp": "2026-12-01T10:00:00Z", "task_id": "t", "domain": "agent", "model": "m",
                       "messages": messages, "outcome": {"passed": True}, "tool_calls_total": 1})


def _table(lines: list[str]) -> pa.Table:
    return pa.table({"line_no": pa.array(range(1, len(lines) + 1), pa.int64()), "line": pa.array(lines, pa.large_string()),
                     "calls": pa.array([True] * len(lines))})


def _meaning(text: str) -> list[dict]:
    """Stored messages as a reader takes them: keys in any order, a null value the same as no key, an
    empty tool-call list the same as none."""
    def clean(o):
        if isinstance(o, dict):
            return {k: clean(v) for k, v in o.items() if v is not None and v != []}
        return [clean(v) for v in o] if isinstance(o, list) else o
    return clean(json.loads(text))


def _stored_messages(con: duckdb.DuckDBPyConnection, line: str) -> str:
    """The messages text the SQL checks would store for `line` (DuckDB writes the JSON it extracts)."""
    return con.execute("SELECT json_extract(?, '$.messages')::VARCHAR", [line]).fetchone()[0]


def test_the_sql_passes_exactly_the_tool_calls_python_would_store_alike():
    con = duckdb.connect()
    escaped = _line(CANONICAL[0]).replace('"type": "function"', '"type": "\\u0066unction"')  # read as written
    lines = [escaped] + [_line(m) for m in CANONICAL + ODD]
    odd = set(query(con, CANONICAL_CALLS_SQL, _t=_table(lines))["line_no"].to_pylist())
    assert odd == set(range(len(CANONICAL) + 2, len(lines) + 1))
    for line in lines[: len(CANONICAL) + 1]:
        python = canonical_line(line, "flywheel")
        assert _meaning(_stored_messages(con, python)) == _meaning(_stored_messages(con, line))


@pytest.mark.parametrize("calls,content", itertools.product(
    [[CALL], [{**CALL, "index": None}], [{**CALL, "function": {"name": "f", "arguments": {"a": [1, 2]}}}],
     [{**CALL, "function": {"name": "f", "arguments": "not json"}}], [{"type": "function", **CALL}], [],
     [{**CALL, "function": {"name": "f", "arguments": [1]}}], [{**CALL, "id": "\u00e9"}]],
    [None, "", "thinking", ...]))
def test_whatever_the_sql_lets_through_python_would_store_alike(calls, content):
    """Variants of one assistant turn: a line the SQL passes is one Python would store alike, and one it
    stops Python changes (or refuses)."""
    msg = {"role": "assistant", **({} if content is ... else {"content": content}), "tool_calls": calls}
    line = _line([{"role": "user", "content": "go"}, msg])
    con = duckdb.connect()
    passed = not len(query(con, CANONICAL_CALLS_SQL, _t=_table([line])))
    python = canonical_line(line, "flywheel")
    if passed:
        assert _meaning(_stored_messages(con, python)) == _meaning(_stored_messages(con, line))
    else:
        assert not isinstance(python, str) or _meaning(_stored_messages(con, python)) != _meaning(_stored_messages(con, line))


def test_only_lines_with_odd_tool_calls_are_rewritten_in_python():
    lines = [_line(m) for m in CANONICAL] + [_line(ODD[0]), _line(ODD[1])]
    out = canonical_batch(_table(lines).drop_columns(["calls"]), "flywheel", 1 << 20, "line", duckdb.connect())
    n = len(CANONICAL)
    assert set(out.originals) == {n + 1}
    assert [(r.line_no, r.field) for r in out.refused] == [(n + 2, "messages[0].tool_calls[0].id")]
    assert out.batch.num_rows == n + 1
    fixed = json.loads(out.batch.to_pydict()["line"][-1])
    assert fixed["messages"][0]["tool_calls"][0]["function"]["arguments"] == '{"q":1}'
