"""The timestamps a record may carry, as DuckDB SQL: which texts are accepted and how each becomes a
TIMESTAMPTZ (`timestamp_sql`), for the JSONL and Parquet checks of `validate_sql` alike."""

from __future__ import annotations

RFC3339_RE = r"\d{4}-\d{2}-\d{2}([Tt ]\d{2}:\d{2}(:\d{2}([.,]\d{1,9})?)?)?([Zz]|[+-](0\d|1[0-4])(:?[0-5]\d)?)?"
"""The timestamps accepted: RFC 3339 / ISO-8601 (`t`/`z` in either case, a `.` or `,` before the
fraction, offsets within +-14:00, no offset = UTC), years 0001-9999. Not `epoch`, `infinity`, `+25:00`."""


_ZONE = r"([Zz]|[+-](?:0\d|1[0-4])(?::?[0-5]\d)?)?"
BASIC_RE = r"(\d{4})(\d{2})(\d{2})[Tt](\d{2})(\d{2})(\d{2})([.,]\d{1,9})?" + _ZONE
"""ISO 8601 basic format (`20261201T100000Z`), rewritten to the extended one before the cast."""
LEAP_RE = r"(\d{4}-\d{2}-\d{2}[Tt ]\d{2}:[0-5]\d:)60([.,]\d{1,9})?" + _ZONE
"""A leap second (`23:59:60Z`): stored as the second after :59, as POSIX time counts it."""


def timestamp_sql(text: str) -> str:
    """`text` (SQL VARCHAR) as a TIMESTAMPTZ, or NULL when it is not an accepted timestamp (`RFC3339_RE`;
    also `BASIC_RE` and `LEAP_RE`, tried only where the common form failed).

    Past the pattern the only letters left are `t`/`z` (either case), so only a text holding a lower-case
    one or a comma is rewritten (`upper`, `,` -> `.`): the common form is cast without two string copies."""
    rewrite = f"contains({text}, 't') OR contains({text}, 'z') OR contains({text}, ',')"
    norm = f"replace(upper({text}), ',', '.')"
    basic = (f"TRY_CAST(CASE WHEN regexp_full_match({text}, '{BASIC_RE}') THEN "
             f"regexp_replace({norm}, '^{BASIC_RE}$', '\\1-\\2-\\3T\\4:\\5:\\6\\7\\8') END AS TIMESTAMPTZ)")
    leap = (f"TRY_CAST(CASE WHEN regexp_full_match({text}, '{LEAP_RE}') THEN "
            f"regexp_replace({norm}, '^{LEAP_RE}$', '\\159\\2\\3') END AS TIMESTAMPTZ) + INTERVAL 1 SECOND")
    return (f"coalesce(TRY_CAST(CASE WHEN regexp_full_match({text}, '{RFC3339_RE}') AND NOT starts_with({text}, '0000') "
            f"THEN CASE WHEN {rewrite} THEN {norm} ELSE {text} END END AS TIMESTAMPTZ), {basic}, {leap})")
