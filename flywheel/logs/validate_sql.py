"""Validation SQL: the DuckDB queries that check, normalize and key one batch of task logs.

Each query yields rows `line_no, err, raw` and the normalized TASK_LOG_SCHEMA columns: `err` is a
struct (k = machine-readable kind, f = field, m = a message a person can act on) or NULL, `raw` the
line or row as read (for quarantine), `id` NULL when the record had none (hashed by `lean_sql`).
JSONL lines are checked from their text (`jsonl_sql`); Parquet rows by a query specialized to the
file's column types (`parquet_sql`).
"""

from __future__ import annotations

import pyarrow as pa

from flywheel.logs.messages import ROLES
from flywheel.logs.options import IngestOptions
from flywheel.logs.schema import REQUIRED_FIELDS, TASK_LOG_SCHEMA
from flywheel.logs.timestamp_sql import timestamp_sql

FIELDS: tuple[str, ...] = tuple(TASK_LOG_SCHEMA.names[:-1])  # all but `extra`
STRING_FIELDS = ("task_id", "domain", "model")
JSON_FIELDS = {"messages": "ARRAY", "outcome": "OBJECT", "reference": None}  # required JSON type
OUT_COLS = (*FIELDS, "extra")
"""The record columns a batch query returns, in TASK_LOG_SCHEMA order."""


def sql_literal(s: str | None) -> str:
    """`s` as a SQL string literal (NULL for None)."""
    return "NULL" if s is None else "'" + str(s).replace("'", "''") + "'"


class Sql(str):
    """A check's field given as an SQL expression (a path computed per row) instead of a name."""


def _err_case(checks: list[tuple[str, str, str | None, str]]) -> str:
    """CASE over (condition, kind, field, message-SQL), first match wins -> struct or NULL."""
    whens = " ".join(
        f"WHEN {cond} THEN struct_pack(k := '{kind}', f := "
        f"{fld if isinstance(fld, Sql) else sql_literal(fld)}::VARCHAR, m := {msg})"
        for cond, kind, fld, msg in checks
    )
    return f"CASE {whens} END"


def _kind_sql(t: str) -> str:
    """A DuckDB JSON type name as the JSON type a person knows (number, string, ...)."""
    return (f"CASE WHEN {t} IN ('BIGINT', 'UBIGINT', 'DOUBLE') THEN 'number' WHEN {t} = 'VARCHAR' THEN 'string' "
            f"ELSE lower({t}) END")


MESSAGE_SHAPE = '[{"role":"JSON","content":"JSON"}]'
"""`json_transform` type of a messages array: NULL exactly when the text is not a JSON array."""


def message_error_sql(m: str, note: str = "", shaped: str = "") -> str:
    """SQL: the first message of the JSON array `m` that is not a canonical chat message, as a struct
    (p = field path such as `messages[2].role`, w = why), or NULL. The reasons read as those of
    `flywheel.logs.messages`, which also checks content parts and tool calls: lines holding those
    go through Python first (`formats.needs_python`) and reach this check already canonical.
    `note` is added to a bad content's reason; `shaped` names `m` already transformed to `MESSAGE_SHAPE`
    (one parse of the array serves the type check and this one)."""
    roles = ", ".join(sql_literal(r) for r in ROLES)

    def one(path: str, why: str) -> str:
        return f"struct_pack(p := 'messages[' || (i - 1) || ']{path}', w := {why})"

    tx, tr, tc = "json_type(x)", "json_type(x, '$.role')", "coalesce(json_type(x, '$.content'), 'NULL')"
    not_obj = f"'expected a chat message object, got ' || {_kind_sql(tx)} || ' ' || left(x::VARCHAR, 60)"
    bad_role = f"left(json_extract(x, '$.role')::VARCHAR, 60) || ' is not one of {', '.join(ROLES)}'"
    bad_content = (f"'expected a string or a list of typed parts, got ' || {_kind_sql(tc)} || ' ' "
                   f"|| left(json_extract(x, '$.content')::VARCHAR, 60) || {sql_literal(note)}")
    case = (f"CASE WHEN {tx} <> 'OBJECT' THEN {one('', not_obj)} "
            f"WHEN {tr} IS NULL THEN {one('.role', sql_literal('missing role'))} "
            f"WHEN {tr} <> 'VARCHAR' OR json_extract_string(x, '$.role') NOT IN ({roles}) THEN {one('.role', bad_role)} "
            f"WHEN {tc} NOT IN ('VARCHAR', 'NULL') THEN {one('.content', bad_content)} END")
    detail = f"list_filter(list_transform(json_extract({m}, '$[*]'), lambda x, i: {case}), lambda e: e IS NOT NULL)[1]"
    # one parse of the array finds the (rare) arrays that may hold a bad message; only those are
    # taken apart message by message (a string role spelt with escapes is flagged here, passed there)
    quoted = ", ".join(sql_literal(f'"{r}"') for r in ROLES)
    maybe = (f"list_bool_or(list_transform({shaped or f'json_transform({m}, {sql_literal(MESSAGE_SHAPE)})'}, "
             f"lambda x: x.role IS NULL OR x.role NOT IN ({quoted}) "
             "OR (x.content IS NOT NULL AND NOT starts_with(x.content, '\"'))))")
    return f"CASE WHEN {maybe} THEN {detail} END"


def _message_check(unit: str) -> tuple[str, str, str, str]:
    """The check on the `m_err` column (`message_error_sql`), naming the message's field path."""
    return ("m_err IS NOT NULL", "bad_message", Sql("m_err.p"), _msg(unit, "'field ''' || m_err.p || ''': ' || m_err.w"))


def _msg(prefix: str, text_sql: str) -> str:
    return f"'{prefix} ' || line_no || ': ' || {text_sql}"


def _mib(n_sql: str) -> str:
    return f"printf('%.1f MiB', {n_sql} / 1048576.0)"


_TEXT_FIELDS = ("id", "timestamp", *STRING_FIELDS)
"""The fields whose unquoted string the checks read (`s_*`): not the JSON ones, whose text would be copied again."""
_BIG_INT = "t_id = 'DOUBLE' AND regexp_full_match(s_id, '-?[0-9]+')"
_PRESENT = " + ".join(f"(j_{f} IS NOT NULL)::INT" for f in FIELDS)
"""How many known fields the object holds: the path extraction finds each once (`j_*` not NULL)."""
DUPLICATE_KEY_SQL = "odd_keys AND (x_extra IS NULL OR len(k) <> len(list_distinct(k)))"
"""A key twice at the top level (`k`: the object's keys, repeats kept). `odd_keys` (the key count is not
the number of known fields present) holds exactly when there is an unknown field or a repeat: with no
unknown field (`x_extra` NULL) a repeat is certain, else the distinct keys tell."""


def jsonl_checks(opts: IngestOptions, unit: str = "line") -> list[tuple[str, str, str | None, str]]:
    """The checks of `jsonl_sql` in the order they run, as (condition, kind, field, message SQL): the
    first that fails is the line's reason (`large.restore_over_cap` reads the order)."""
    cap, P = opts.max_field_bytes, unit
    per = "per line" if unit == "line" else "per record"

    def got(f: str) -> str:
        return f"'got ' || lower(t_{f}) || ' ' || left(j_{f}, 80)"

    checks: list[tuple[str, str, str | None, str]] = [
        (f"strlen(line) > {opts.max_line_bytes}", "line_too_large", None,
         _msg(P, f"'line is ' || {_mib('strlen(line)')} || ', over the {opts.max_line_bytes / 1048576:.1f} MiB line cap (max_line_bytes); split or trim the record'")),
        ("NOT ok", "invalid_json", None, _msg(P, "'not valid JSON (truncated or malformed line)'")),
        ("top <> 'OBJECT'", "not_object", None,
         _msg(P, f"'expected one JSON object {per}, got ' || lower(top) || ' ' || left(line, 60)")),
        (DUPLICATE_KEY_SQL, "duplicate_key", None,
         _msg(P, "'a field appears twice in the object (keys: ' || left(array_to_string(k, ', '), 80) || '); "
                 "which one is meant is ambiguous'")),
    ]
    # id: optional, string or integer (an integer beyond 64 bits is kept as its text)
    checks.append((f"j_id IS NOT NULL AND t_id NOT IN ('VARCHAR','BIGINT','UBIGINT','NULL') AND NOT ({_BIG_INT})", "wrong_type", "id",
                   _msg(P, "'field ''id'': expected string or integer, ' || " + got("id"))))
    for f in REQUIRED_FIELDS:
        j = f"j_{f}"
        checks.append((f"{j} IS NULL", "missing_field", f, _msg(P, f"'missing required field ''{f}'''")))
        checks.append((f"t_{f} = 'NULL'", "missing_field", f, _msg(P, f"'required field ''{f}'' is null'")))
    for f in ("timestamp", *STRING_FIELDS):
        j = f"j_{f}"
        want = "ISO-8601 string" if f == "timestamp" else "string"
        checks.append((f"t_{f} <> 'VARCHAR'", "wrong_type", f,
                       _msg(P, f"'field ''{f}'': expected {want}, ' || " + f"'got ' || left({j}, 80)")))
        checks.append((f"s_{f} = ''", "wrong_type", f, _msg(P, f"'field ''{f}'': expected non-empty {want}, got \"\"'")))
    for f, want in JSON_FIELDS.items():
        if want:
            checks.append((f"t_{f} <> '{want}'", "wrong_type", f,
                           _msg(P, f"'field ''{f}'': expected JSON {want.lower()}, ' || " + got(f))))
    for f in FIELDS:
        checks.append((f"strlen(j_{f}) > {cap}", "field_too_large", f,
                       _msg(P, f"'field ''{f}'' is ' || {_mib(f'strlen(j_{f})')} || ', over the {cap / 1048576:.1f} MiB per-field cap (max_field_bytes)'")))
    checks.append((f"strlen(x_extra) > {cap}", "field_too_large", "extra",
                   _msg(P, f"'unknown fields total ' || {_mib('strlen(x_extra)')} || ', over the per-field cap'")))
    checks.append(("ts IS NULL", "bad_timestamp", "timestamp",
                   _msg(P, "'field ''timestamp'': ''' || left(s_timestamp, 60) || ''' is not an ISO-8601 timestamp (e.g. 2026-12-01T10:00:00Z)'")))
    checks.append(_message_check(P))
    return checks


def check_order(opts: IngestOptions, unit: str = "line") -> list[tuple[str, str | None]]:
    """The (kind, field) of each of `jsonl_checks` in the order they run (field None where a row computes it)."""
    return [(kind, fld if type(fld) is str else None) for _, kind, fld, _ in jsonl_checks(opts, unit)]


def jsonl_sql(opts: IngestOptions, unit: str = "line") -> str:
    """Validation SQL for JSONL lines (table `_b`: line_no, line): every field's JSON type and text read
    in one pass over the line, then the checks in order, the first that fails naming the reason.
    `unit` is what a reason calls a line: `line`, or `record` for the elements of a JSON array file."""
    paths = "[" + ", ".join(f"'$.{f}'" for f in FIELDS) + "]"
    vpaths = paths[:-1] + ", '$.extra']"  # the values, and an `extra` object's (the flywheel's own exports hold one)
    spaths = "[" + ", ".join(f"'$.{f}'" for f in _TEXT_FIELDS) + "]"
    known = "[" + ", ".join(f"'{f}'" for f in FIELDS) + "]"
    checks = jsonl_checks(opts, unit)
    cols = ", ".join([*(f"v[{i + 1}] AS j_{f}, t[{i + 1}] AS t_{f}" for i, f in enumerate(FIELDS)),
                      *(f"s[{i + 1}] AS s_{f}" for i, f in enumerate(_TEXT_FIELDS)), f"v[{len(FIELDS) + 1}] AS j_extra"])
    return f"""
    WITH a AS (  -- one parse: TRY(json_type) is NULL exactly when the line is not JSON
        SELECT line_no, line, TRY(json_type(line)) AS top FROM _b
    ), a2 AS (  -- `ok` and `top` in their own step: were json_type(line) repeated in b's guards, DuckDB
                --  would hoist the shared call out of the CASEs and run it on malformed lines too
        SELECT line_no, line, top IS NOT NULL AS ok, top FROM a
    ), b AS (  -- one pass each for the values, their JSON types and the unquoted strings of the text fields
        SELECT line_no, line, ok, top,
               CASE WHEN top = 'OBJECT' THEN json_extract(line, {vpaths}) END AS v,
               CASE WHEN top = 'OBJECT' THEN json_type(line, {paths}) END AS t,
               CASE WHEN top = 'OBJECT' THEN json_extract_string(line, {spaths}) END AS s
        FROM a2
    ), c AS (
        SELECT line_no, line, ok, top, {cols}, CASE WHEN top = 'OBJECT' THEN json_keys(line) END AS k
        FROM b
    ), c2 AS (  -- unknown fields only where the key count says there may be some: the object's top-level
                --  values beside its keys (`$.*`, in the same order), the known ones left out; each value is
                --  cut out as written, never the whole line rebuilt (json_merge_patch built a mutable copy of
                --  every such line: ~45% of this query's memory on lines that carry an `extra` object)
        --  (the common case, `extra` the one unknown key, reads the value already extracted)
        SELECT *, CASE WHEN odd_keys AND unknown <> ['extra'] THEN list_filter(list_zip(k, json_extract(line, '$.*')),
                                                      lambda p: NOT list_contains({known}, p[1])) END AS u
        FROM (SELECT *, CASE WHEN odd_keys THEN list_filter(k, lambda x: NOT list_contains({known}, x)) END AS unknown
              FROM (SELECT *, len(k) <> {_PRESENT} AS odd_keys FROM c))
    ), c3 AS (
        SELECT *, CASE WHEN unknown = ['extra'] THEN '{{"extra":' || j_extra || '}}'
                       WHEN len(u) > 0 THEN '{{' || array_to_string(list_transform(
                  u, lambda p: to_json(p[1])::VARCHAR || ':' || p[2]::VARCHAR), ',') || '}}' END AS x_extra
        FROM c2
    ), d AS (
        SELECT *, {timestamp_sql('s_timestamp')} AS ts,
               CASE WHEN t_messages = 'ARRAY' THEN {message_error_sql("j_messages")} END AS m_err FROM c3
    ), e AS (
        SELECT *, {_err_case(checks)} AS err FROM d
    )
    SELECT line_no, err,
           CASE WHEN err IS NOT NULL THEN left(line, {opts.raw_preview_chars}) END AS raw,
           CASE WHEN t_id = 'VARCHAR' THEN nullif(s_id, '')
                WHEN t_id IN ('BIGINT', 'UBIGINT') THEN j_id::VARCHAR
                WHEN {_BIG_INT} THEN s_id END AS id,
           ts AS timestamp, s_task_id AS task_id, s_domain AS domain, s_model AS model,
           j_messages::VARCHAR AS messages, j_outcome::VARCHAR AS outcome,
           CASE WHEN t_reference <> 'NULL' THEN j_reference::VARCHAR END AS reference,
           x_extra AS extra
    FROM e
    """


def arrow_kind(t: pa.DataType) -> str:
    """What a Parquet column's type can hold for a record field: string, int, time, list, object or other."""
    if pa.types.is_dictionary(t):
        return arrow_kind(t.value_type)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "string"
    if pa.types.is_integer(t):
        return "int"
    if pa.types.is_timestamp(t) or pa.types.is_date(t):
        return "time"
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return "list"
    if pa.types.is_struct(t) or pa.types.is_map(t):
        return "object"
    return "other"


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def safe_names(schema: pa.Schema) -> list[str]:
    """The quoted positional name each column of `schema` is read under (see `parquet_sql`)."""
    return [f'"_c{i}"' for i in range(len(schema.names))]


def parquet_reader(schema: pa.Schema, path_sql: str, a: int, b: int) -> str:
    """Rows [a, b) of a local Parquet file, its columns renamed by position, plus the 1-based `line_no`."""
    cols = ", ".join(f"{_ident(n)} AS {c}" for n, c in zip(schema.names, safe_names(schema), strict=True))
    return (f"(SELECT {cols}, file_row_number + 1 AS line_no "
            f"FROM read_parquet({path_sql}, file_row_number = true) "
            f"WHERE file_row_number >= {a} AND file_row_number < {b})")


def parquet_sql(schema: pa.Schema, opts: IngestOptions, source: str = "_b") -> str:
    """Validation SQL for one Parquet file, specialized to its column types. `source` is the
    relation with the file's columns renamed by position (`safe_names`: `_c0`, `_c1`, ...) plus
    `line_no` (a registered Arrow batch, or a read_parquet): a file's column can then never shadow
    an internal alias (`err`, `n_id`, `m_err`, `line_no`, ...); its original name is kept in `extra`."""
    cap, P = opts.max_field_bytes, "row"
    names = set(schema.names)
    q: dict[str, str] = {}
    for n, c in zip(schema.names, safe_names(schema), strict=True):
        q.setdefault(n, c)  # a repeated name: the first column is the field
    checks: list[tuple[str, str, str | None, str]] = []
    val: dict[str, str] = {}
    pre: list[str] = []
    parsed: list[str] = []  # computed a level below `pre`, so `pre` may read them without parsing again
    for f in FIELDS:
        required = f in REQUIRED_FIELDS
        if f not in names:
            val[f] = "NULL::TIMESTAMPTZ" if f == "timestamp" else "NULL::VARCHAR"
            if required:
                checks.append(("TRUE", "missing_field", f, _msg(P, f"'missing required field ''{f}'' (no such column)'")))
            continue
        c, kind, tname = q[f], arrow_kind(schema.field(f).type), str(schema.field(f).type)
        if required:
            checks.append((f"{c} IS NULL", "missing_field", f, _msg(P, f"'required field ''{f}'' is null'")))
        bad_type = (f"{c} IS NOT NULL", "wrong_type", f)
        if f == "timestamp":
            if kind == "time":
                v = f"CAST({c} AS TIMESTAMPTZ)"
                val[f] = f"CASE WHEN isfinite({v}) AND year({v}) BETWEEN 1 AND 9999 THEN {v} END"
                checks.append((f"{c} IS NOT NULL AND {val[f]} IS NULL", "bad_timestamp", f,
                               _msg(P, f"'field ''timestamp'': ' || {c}::VARCHAR || ' is outside years 1-9999'")))
            elif kind == "string":
                val[f] = timestamp_sql(c)
                checks.append((f"{c} IS NOT NULL AND {val[f]} IS NULL", "bad_timestamp", f,
                               _msg(P, f"'field ''timestamp'': ''' || left({c}, 60) || ''' is not an ISO-8601 timestamp (e.g. 2026-12-01T10:00:00Z)'")))
            else:
                val[f] = "NULL::TIMESTAMPTZ" if f == "timestamp" else "NULL::VARCHAR"
                checks.append((*bad_type, _msg(P, f"'field ''timestamp'': expected ISO-8601 string or timestamp column, got {tname} ' || left({c}::VARCHAR, 60)")))
        elif f in JSON_FIELDS:
            want = JSON_FIELDS[f]
            if kind == "string":
                val[f] = c
                jt = f"jt_{f}"  # one parse: TRY(json_type) is NULL exactly when the text is not JSON
                if f == "messages":  # the parse the message check needs also says ARRAY (most rows)
                    parsed.append(f"TRY(json_transform({c}, {sql_literal(MESSAGE_SHAPE)})) AS shaped_messages")
                    pre.append(f"CASE WHEN shaped_messages IS NOT NULL THEN 'ARRAY' ELSE TRY(json_type({c})) END AS {jt}")
                else:
                    pre.append(f"TRY(json_type({c})) AS {jt}")
                checks.append((f"{c} IS NOT NULL AND {jt} IS NULL", "invalid_json", f,
                               _msg(P, f"'field ''{f}'' is not valid JSON: ' || left({c}, 60)")))
                if want:
                    checks.append((f"{jt} <> '{want}'", "wrong_type", f,
                                   _msg(P, f"'field ''{f}'': expected JSON {want.lower()}, got ' || lower({jt}) || ' ' || left({c}, 60)")))
            elif kind in ("list", "object") and (want is None or (want == "ARRAY") == (kind == "list")):
                val[f] = f"to_json({c})::VARCHAR"
            else:
                val[f] = "NULL::TIMESTAMPTZ" if f == "timestamp" else "NULL::VARCHAR"
                checks.append((*bad_type, _msg(P, f"'field ''{f}'': expected JSON {(want or 'value').lower()}, got {tname} column'")))
            checks.append((f"strlen({val[f]}) > {cap}", "field_too_large", f,
                           _msg(P, f"'field ''{f}'' is ' || {_mib(f'strlen({val[f]})')} || ', over the {cap / 1048576:.1f} MiB per-field cap (max_field_bytes)'")))
        else:  # id and the string fields
            if kind == "string" or (kind == "int" and f == "id"):
                val[f] = f"nullif({c}::VARCHAR, '')" if f == "id" else c
                if f != "id":
                    checks.append((f"{c} = ''", "wrong_type", f, _msg(P, f"'field ''{f}'': expected non-empty string, got \"\"'")))
                    checks.append((f"strlen({c}) > {cap}", "field_too_large", f,
                                   _msg(P, f"'field ''{f}'' is ' || {_mib(f'strlen({c})')} || ', over the per-field cap'")))
            else:
                val[f] = "NULL::TIMESTAMPTZ" if f == "timestamp" else "NULL::VARCHAR"
                checks.append((*bad_type, _msg(P, f"'field ''{f}'': expected string, got {tname} ' || left({c}::VARCHAR, 60)")))
    if "messages" in names and arrow_kind(schema.field("messages").type) in ("string", "list"):
        m = q["messages"] if arrow_kind(schema.field("messages").type) == "string" else f"to_json({q['messages']})"
        note = " (Parquet content parts are not normalised: write them as JSON Lines, or join the text parts)"
        if arrow_kind(schema.field("messages").type) == "string":
            pre.append(f"TRY(CASE WHEN shaped_messages IS NOT NULL THEN {message_error_sql(m, note, 'shaped_messages')} END) AS m_err")
        else:
            pre.append(f"TRY(CASE WHEN json_type({m}) = 'ARRAY' THEN {message_error_sql(m, note)} END) AS m_err")
        checks.append(_message_check(P))
    unknown = [n for n in dict.fromkeys(schema.names) if n not in FIELDS and n != "extra"]
    for n in unknown:  # a float column's NaN or infinity would be written into `extra` as a bare NaN: not JSON
        if pa.types.is_floating(schema.field(n).type):
            checks.append((f"(isnan({q[n]}) OR isinf({q[n]}))", "invalid_json", n,
                           _msg(P, f"'field ''{sql_literal(n)[1:-1]}'': ' || {q[n]}::VARCHAR || ' is not a JSON number "
                                   "(write null, or the value as a string)'")))
    extra_parts = []
    if "extra" in names and arrow_kind(schema.field("extra").type) == "string":
        extra_parts.append(f"CASE WHEN json_valid({q['extra']}) THEN {q['extra']} END")
    elif "extra" in names:
        unknown.append("extra")
    if unknown:
        obj = "json_object(" + ", ".join(f"{sql_literal(n)}, {q[n]}" for n in unknown) + ")"
        extra_parts.append(obj)
    if not extra_parts:
        val["extra"] = "NULL::VARCHAR"
    elif len(extra_parts) == 1:
        val["extra"] = f"{extra_parts[0]}::VARCHAR"
    else:
        val["extra"] = f"json_merge_patch(coalesce({extra_parts[0]}, '{{}}'), {extra_parts[1]})::VARCHAR"
    cols = ", ".join(f"{val[f]} AS n_{f}" for f in (*FIELDS, "extra"))
    row = "struct_pack(" + ", ".join(f"{_ident(n)} := i.{q[n]}" for n in dict.fromkeys(schema.names)) + ")"
    return f"""
    SELECT line_no, err,
           CASE WHEN err IS NOT NULL THEN left(to_json({row})::VARCHAR, {opts.raw_preview_chars}) END AS raw,
           {", ".join(f"n_{f} AS {f}" for f in (*FIELDS, "extra"))}
    FROM (SELECT *, {cols}, {_err_case(checks)} AS err FROM (SELECT *{"".join(", " + p for p in pre)} FROM
          (SELECT *{"".join(", " + p for p in parsed)} FROM {source}))) i
    """


_HASH_SRC = ("concat_ws(chr(31), epoch_us(timestamp)::VARCHAR, task_id, domain, model, messages, outcome, "
             "coalesce(reference, ''), coalesce(extra, ''))")
"""What a record without an `id` is keyed by (its md5): the canonical record, field by field."""


def lean_sql(sql: str, passthrough: tuple[str, ...]) -> str:
    """The batch query over `sql` (`jsonl_sql` or `parquet_sql`): validation, key and a 64-bit hash of
    the key -- but NOT the big JSON text columns that are already strings in the file (`passthrough`):
    those never round-trip through DuckDB; Python takes them straight from the Arrow batch. Stored
    keys are looked up afterwards on the narrow (line_no, h, id) columns alone (`Loader._drop_stored`): joining `task_log_ids` here
    would build the join's hash table out of the batch's whole rows, text and all."""
    rest = ", ".join(c for c in OUT_COLS if c not in ("id", *passthrough))
    return f"""
    SELECT line_no, err, raw, id, {rest}, hash(id) AS h FROM (
        SELECT line_no, err, raw, CASE WHEN err IS NULL THEN coalesce(id, md5({_HASH_SRC})) END AS id, {rest}
        FROM ({sql}) v0)
    """
