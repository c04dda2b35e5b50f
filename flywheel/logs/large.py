"""Records too large to parse once per check: a line whose field is over the per-field cap is read once
in Python and handed to the SQL checks with its large values replaced by stand-ins (the same JSON type,
the same first 200 characters); the over-cap field's quarantine reason is then put back
(`restore_over_cap`). Lines the lane cannot read exactly as DuckDB does are checked as written.

Why: the validation query parses a line once for each JSON function it applies (its type, the values
and their types, the text fields, the keys, the unknown fields, the message check) and holds each parse
for the vector, so an 8 MiB record cost ~+180 MiB on its own (about 22x its size). Such a record is
quarantined whatever else it holds: the only question is which reason comes first. A stand-in keeps every
check before the size check as it was (keys, duplicates, types, empty strings, the start of a value a
reason quotes), and every check after it is overruled by the size check the stand-in hid.

The line is read as the bytes Arrow holds (not a Python string of it), and a long string value is
measured there, escape by escape, and never decoded but for its first characters: the lane holds the
rest of the line, parsed, and a few hundred bytes per long string.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from json.decoder import scanstring

import pyarrow as pa
import pyarrow.compute as pc

from flywheel.logs.validate_sql import FIELDS

_WS = " \t\n\r"
_CTRL_B = re.compile(rb"[\x00-\x1f]")
_QUOTE = re.compile(rb'"')
_SIZED_ESCAPE = re.compile(rb'\\[^"\\bfnrt]')  # escapes written back otherwise: `\/`, `\uXXXX`, and invalid ones
_HEX4 = re.compile(rb"[0-9a-fA-F]{4}")
_ESCAPE = re.compile(rb"\\(?:u[0-9a-fA-F]{4}|.)", re.S)  # one escape, whole
_KEY_NEXT = re.compile(rb"[ \t\n\r]*:")
_SHORT_ESCAPES = frozenset(map(ord, '"\\\b\f\n\r\t'))  # written back as two bytes; other controls as \u00XX
_DECODER = json.JSONDecoder()
KEEP_CHARS = 200
"""How much of a large value its stand-in keeps: the reasons quote the first 80 characters of a value."""
SHRINK_MIN_BYTES = 4096
"""Values smaller than this are left as written: they cost the checks nothing worth saving."""


class _Long(str):
    """The first characters of a long string value and its written size (`json_size`): what the lane needs
    of it, measured on the line's bytes without decoding the rest."""

    size: int


@dataclass(frozen=True)
class OverCap:
    """A field of one record over the per-field cap, and its size as the checks measure it (its compact
    JSON text: `field` a known field, or `extra` for the unknown fields together)."""

    field: str
    size: int


def json_size(v: object, floor: bool = False) -> int:
    """Bytes of `v` written as compact JSON the way DuckDB writes a value back (UTF-8 as is; `"`, `\\`
    and control characters escaped), without building the text. A float (or an integer past 64 bits,
    which DuckDB reads as one) may be written a few bytes apart: `floor` counts each as 1 byte, a lower
    bound of the size."""
    if isinstance(v, _Long):
        return v.size
    if isinstance(v, str):
        n = len(v) if v.isascii() else len(v.encode("utf-8"))
        n += v.count('"') + v.count("\\")
        if not v.isprintable():  # control characters: \b \f \n \r \t take 2 bytes, the rest \u00XX 6
            for c in "\b\f\n\r\t":
                n += v.count(c)
            n += sum(5 * v.count(chr(i)) for i in range(32) if chr(i) not in "\b\f\n\r\t")
        return n + 2
    if isinstance(v, dict):
        return 1 + sum(json_size(k) + 1 + json_size(x, floor) + 1 for k, x in v.items()) + (not v)
    if isinstance(v, list):
        return 1 + sum(json_size(x, floor) + 1 for x in v) + (not v)
    if v is None or v is True:
        return 4
    if v is False:
        return 5
    if floor and (isinstance(v, float) or not -(1 << 63) <= v < 1 << 64):
        return 1
    return len(json.dumps(v))


def _head(v: object, budget: int) -> object:
    """A value of `v`'s JSON type whose compact text begins as `v`'s does, for its first `budget` characters
    or more, and is about that long: the stand-in of a large value (never an empty string where `v` is not)."""
    if isinstance(v, str):
        return v[:max(budget, 0)]
    if isinstance(v, list):
        out: list = []
        for x in v:
            if budget <= 0:
                break
            out.append(_head(x, budget))
            budget -= json_size(out[-1]) + 1
        return out
    if isinstance(v, dict):
        kept: dict = {}
        for k, x in v.items():
            if budget <= 0:
                break
            kept[k] = _head(x, budget - json_size(k))
            budget -= json_size(k) + json_size(kept[k]) + 2
        return kept
    return v


def _ws(s: str, i: int) -> int:
    while i < len(s) and s[i] in _WS:
        i += 1
    return i


def _escaped(buf: memoryview, at: int, start: int) -> bool:
    """Whether the byte at `at` follows an odd run of backslashes (the string's text begins at `start`)."""
    k = at
    while k > start and buf[k - 1] == 0x5C:
        k -= 1
    return (at - k) % 2 == 1


def _long_string(buf: memoryview, a: int, b: int) -> _Long | None:
    """The string token `buf[a:b]` (its quotes included) as a `_Long`: its size as DuckDB writes it back
    (escapes `\\/` and `\\uXXXX` written as the character, `"`, `\\` and control characters escaped) and
    its first `KEEP_CHARS` characters, decoded; None when Python's parser and DuckDB's may read it apart
    (a raw control character, an unknown escape, a lone surrogate): the line is then checked as written.
    Only the escapes that change the size are visited (the others are written back as they are)."""
    if _CTRL_B.search(buf, a + 1, b - 1):
        return None
    size, high_end = b - a, -1
    for m in _SIZED_ESCAPE.finditer(buf, a + 1, b - 1):
        at = m.start()
        if _escaped(buf, at, a + 1):  # the second backslash of an escaped one
            continue
        if high_end >= 0 and at != high_end:  # a high surrogate not followed at once by its low half
            return None
        if buf[at + 1] == 0x2F:  # `\/`
            size -= 1
            continue
        hexa = _HEX4.match(buf, at + 2, b - 1) if buf[at + 1] == 0x75 else None
        if hexa is None:  # an escape JSON does not have
            return None
        c = int(hexa.group(), 16)
        if 0xDC00 <= c < 0xE000:  # the low half of a pair: both halves are one 4-byte character
            if high_end != at:
                return None
            size, high_end = size + 4 - 12, -1
        elif 0xD800 <= c < 0xDC00:
            high_end = at + 6
        else:
            size += (2 if c in _SHORT_ESCAPES else 6 if c < 0x20 else len(chr(c).encode())) - 6
    if high_end >= 0:
        return None
    value = _Long(_head_text(buf, a, b))
    value.size = size
    return value


def _head_text(buf: memoryview, a: int, b: int) -> str:
    """The first `KEEP_CHARS` characters of the (valid) string token `buf[a:b]`, decoded from a window of
    its bytes cut neither inside an escape nor inside a UTF-8 character (12 bytes: the longest character)."""
    cut = min(b - 1, a + 1 + 12 * KEEP_CHARS)
    for m in _ESCAPE.finditer(buf, a + 1, min(b - 1, cut + 12)):
        if m.start() < cut < m.end():
            cut = m.start()
    while cut > a + 1 and buf[cut] & 0xC0 == 0x80:
        cut -= 1
    head = scanstring(str(buf[a + 1:cut], "utf-8") + '"', 0, True)[0][:KEEP_CHARS]
    if head and 0xD800 <= ord(head[-1]) < 0xDC00:  # the cut fell inside a pair
        head = head[:-1]
    return head


def _reduced(buf: memoryview) -> tuple[str, str, list[_Long]] | None:
    """The line as text with each long string token replaced by a short marker (a string no line holds: a
    NUL and a fresh random tag, then the long string's index in the list returned), the marker's prefix,
    and the long strings: the rest of the line is decoded and parsed as usual, the long strings only
    measured. Only whole, valid string tokens are replaced, by string tokens, so the line parses as it did.
    None when a long string cannot be measured or is a key."""
    mark = f"\x00{secrets.token_hex(8)}:"
    parts: list[str] = []
    longs: list[_Long] = []
    at = 0
    for a, b in _strings(buf):
        if b - a < SHRINK_MIN_BYTES:
            continue
        long = _long_string(buf, a, b)
        if long is None or _KEY_NEXT.match(buf, b):
            return None
        parts += [str(buf[at:a], "utf-8"), json.dumps(f"{mark}{len(longs)}")]
        longs.append(long)
        at = b
    parts.append(str(buf[at:], "utf-8"))
    return "".join(parts), mark, longs


def _strings(buf: memoryview) -> Iterator[tuple[int, int]]:
    """The (start, end) of each string token of a JSON text, left to right (a quote outside a string always
    opens one, so the tokens found are the text's). Each ends at the first quote after it not escaped; the
    quotes are found by a search, not one regular expression for the token: Python's keeps state for each
    repeat of a group (~200 MiB for a 7 MiB traceback)."""
    at = 0
    while (m := _QUOTE.search(buf, at)) is not None:
        a = i = m.start()
        while (e := _QUOTE.search(buf, i + 1)) is not None and _escaped(buf, e.start(), a + 1):
            i = e.start()
        if e is None:
            return  # unterminated: the line is not JSON, the checks say so
        at = e.end()
        yield a, at


def _restored(v: object, mark: str, longs: list[_Long]) -> object:
    """`v` (a parsed value of the reduced line) with its markers back as the long strings they stand for."""
    if isinstance(v, str):
        return longs[int(v[len(mark):])] if v.startswith(mark) else v
    if isinstance(v, list):
        return [_restored(x, mark, longs) for x in v]
    if isinstance(v, dict):
        return {k: _restored(x, mark, longs) for k, x in v.items()}
    return v


def _members(line: str) -> list[tuple[str, int, int, object]] | None:
    """The top-level members of the JSON object `line` as (key, value start, value end, value), read
    once; None when the line is not one JSON object (the SQL checks then say why, cheaply)."""
    i = _ws(line, 0)
    if not line.startswith("{", i):
        return None
    out: list[tuple[str, int, int, object]] = []
    i = _ws(line, i + 1)
    try:
        if line.startswith("}", i):
            return out if _ws(line, i + 1) == len(line) else None
        while True:
            if not line.startswith('"', i):
                return None
            key, i = scanstring(line, i + 1, True)
            i = _ws(line, i)
            if not line.startswith(":", i):
                return None
            start = _ws(line, i + 1)
            value, end = _DECODER.raw_decode(line, start)
            out.append((key, start, end, value))
            i = _ws(line, end)
            if line.startswith(",", i):
                i = _ws(line, i + 1)
                continue
            if line.startswith("}", i) and _ws(line, i + 1) == len(line):
                return out
            return None
    except (ValueError, RecursionError):
        return None


def shrink_line(line: str | bytes | memoryview, cap: int) -> tuple[str, list[OverCap]] | None:
    """`line` (its UTF-8 bytes, read in place) with its large values replaced by stand-ins, and the fields
    over `cap`; None when no field is surely over the cap (`json_size`'s lower bound), or the line is not a
    JSON object, or it holds a value DuckDB may read otherwise (`_odd`): the line is then checked as
    written. A size a reason gives counts a float as Python writes it: it may be a few bytes from DuckDB's."""
    reduced = _reduced(memoryview(line.encode("utf-8") if isinstance(line, str) else line))
    if reduced is None:
        return None
    line, mark, longs = reduced
    members = _members(line)
    if not members:
        return None
    written = json.dumps(mark)[1:-1]  # as the reduced line holds it
    marked = [line.find(written, start, end) >= 0 for _, start, end, _ in members]
    members = [(k, start, end, _restored(v, mark, longs) if has else v)
               for (k, start, end, v), has in zip(members, marked, strict=True)]
    if any(_odd(k) or _odd(v) for k, _, _, v in members):
        return None
    over: dict[str, int] = {}
    for k, _, _, v in members:
        if k in FIELDS and k not in over and json_size(v, floor=True) > cap:  # a repeated key fails earlier
            over[k] = json_size(v)
    unknown = [(k, v) for k, _, _, v in members if k not in FIELDS]
    if unknown:  # the checks' `x_extra`: the unknown members as one object (`{"extra":...}` for that key alone)
        def total(floor: bool) -> int:
            return 2 + sum(json_size(k) + 1 + json_size(v, floor) for k, v in unknown) + len(unknown) - 1
        if total(True) > cap:
            over["extra"] = total(False)
    if not over:
        return None
    parts, at = [], 0
    for (_, start, end, v), has in zip(members, marked, strict=True):
        if isinstance(v, (str, list, dict)) and (has or end - start >= SHRINK_MIN_BYTES):
            parts += [line[at:start], json.dumps(_head(v, KEEP_CHARS), ensure_ascii=False)]
            at = end
    parts.append(line[at:])
    return "".join(parts), [OverCap(f, s) for f, s in over.items()]


def _odd(v: object) -> bool:
    """Whether `v` holds what DuckDB's parser may refuse where Python's takes it (a lone surrogate, an
    infinite number): such a line is never rewritten, the checks must see it as written."""
    if isinstance(v, float):
        return v in (float("inf"), float("-inf")) or v != v
    if isinstance(v, str):
        if v.isascii():
            return False
        try:
            v.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(v, dict):
        return any(_odd(k) or _odd(x) for k, x in v.items())
    if isinstance(v, list):
        return any(_odd(x) for x in v)
    return False


def shrink_large(batch: pa.Table, cap: int) -> tuple[pa.Table, dict[int, list[OverCap]]]:
    """`batch` (line_no, line) with each line that holds a field over `cap` shrunk (`shrink_line`), and those
    lines' over-cap fields by line number. Only lines longer than `cap` are read: `json_size`'s lower bound
    of a value is never more than its text as written."""
    long = pc.greater(pc.binary_length(batch["line"]), cap)
    if not pc.any(long).as_py():
        return batch, {}
    found: dict[int, list[OverCap]] = {}
    nos, texts = [], []
    for i in pc.indices_nonzero(long).to_pylist():  # one line at a time: never a copy of them all
        n = batch["line_no"][i].as_py()
        out = shrink_line(memoryview(batch["line"][i].as_buffer()), cap)  # its bytes in place
        if out is not None:
            nos.append(n)
            texts.append(out[0])
            found[n] = out[1]
    if not found:
        return batch, {}
    shrunk = pa.table({"line_no": pa.array(nos, pa.int64()), "line": pa.array(texts, batch.schema.field("line").type)})
    rest = batch.filter(pc.invert(pc.is_in(batch["line_no"], shrunk["line_no"])))
    return pa.concat_tables([rest, shrunk]), found


def over_cap_reason(unit: str, line_no: int, over: OverCap, cap: int) -> str:
    """The reason the SQL size check gives (`validate_sql.jsonl_sql`), for a field the stand-in hid."""
    mib = f"{over.size / 1048576:.1f} MiB"
    if over.field == "extra":
        return f"{unit} {line_no}: unknown fields total {mib}, over the per-field cap"
    return f"{unit} {line_no}: field '{over.field}' is {mib}, over the {cap / 1048576:.1f} MiB per-field cap (max_field_bytes)"


def restore_over_cap(cand: pa.Table, found: dict[int, list[OverCap]], order: list[tuple[str, str | None]],
                     unit: str, cap: int) -> pa.Table:
    """`cand` (the checks' rows) with each shrunk line's reason put back: its first over-cap field's size
    check, unless a check before it in `order` (the checks' (kind, field) in the order they run) failed."""
    if not found:
        return cand
    mask = pc.is_in(cand["line_no"], pa.array(list(found), pa.int64()))
    hit = cand.filter(mask)
    rank = {key: i for i, key in enumerate(order)}
    errs = []
    for n, err in zip(hit["line_no"].to_pylist(), hit["err"].to_pylist(), strict=True):
        first = min(found[n], key=lambda o: rank[("field_too_large", o.field)])
        if err is None or rank.get((err["k"], err["f"]), len(order)) > rank[("field_too_large", first.field)]:
            err = {"k": "field_too_large", "f": first.field, "m": over_cap_reason(unit, n, first, cap)}
        errs.append(err)
    hit = hit.set_column(hit.schema.get_field_index("err"), "err", pa.array(errs, cand.schema.field("err").type))
    return pa.concat_tables([cand.filter(pc.invert(mask)), hit])
