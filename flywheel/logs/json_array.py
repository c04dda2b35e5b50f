"""A JSON array read as a stream: each element's raw text cut out where it ends, never the whole document
parsed at once.

A vectorized scan (numpy, per read) finds the quotes that open or close strings (a quote after an odd
run of backslashes is escaped), the brackets and commas outside strings, and the nesting depth after
each; an element ends at a comma or the closing `]` at depth 1. Memory is one read plus the record in
progress, whatever the file's size; a record past the size cap is skipped (its first bytes kept for
the quarantine) without being buffered; depth is a counter, so a deeply nested record is just text
that validation then judges on its own. The elements' text goes through the same checks as JSON lines.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

READ_BYTES = 4 << 20
"""Bytes per read of the (decompressed) stream."""
HEAD_BYTES = 8192
"""What is kept of a record that is skipped (for the quarantine's raw preview)."""

_STRUCT = np.zeros(256, bool)
_STRUCT[[ord(c) for c in "[]{},"]] = True
_DELTA = np.zeros(256, np.int64)
_DELTA[[ord("["), ord("{")]] = 1
_DELTA[[ord("]"), ord("}")]] = -1
_WS = b" \t\r\n"


@dataclass(frozen=True)
class Skipped:
    """An element not handed on: `kind` and `reason` for its quarantine row, its first bytes in `head`."""

    index: int  # 1-based position in the array (0: the file as a whole)
    kind: str
    reason: str
    head: bytes


def too_large(unit: str, n: int, size: int, cap: int, head: bytes) -> Skipped:
    """A line or record over the cap, dropped as it streamed by (the words of the SQL check's reason)."""
    return Skipped(n, "line_too_large", f"{unit} {n}: {unit} is at least {_human(size)}, over the "
                   f"{_human(cap)} line cap (max_line_bytes); split or trim the record", head.lstrip(_WS))


def _human(n: int) -> str:
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 1024:.1f} KiB"


class _Scan:
    """State carried from one read to the next."""

    def __init__(self, max_record_bytes: int):
        self.cap = max_record_bytes
        self.in_str = False
        self.bs_run = 0  # backslashes at the end of the previous read
        self.depth = 0
        self.state = "before"  # before -> inside -> after
        self.acc: bytearray | None = None  # the element in progress, when it spans reads
        self.size = 0
        self.skipping = False
        self.index = 0  # elements started
        self.error = ""

    def _real_quotes(self, b: np.ndarray) -> np.ndarray:
        """Positions of the quotes not escaped by an odd run of backslashes before them."""
        q = np.flatnonzero(b == 34)
        run, alive, j = np.zeros(len(q), np.int64), np.ones(len(q), bool), 1
        while alive.any():
            pos = q - j
            inside = pos >= 0
            at_start = alive & (pos == -1)
            run[at_start] += self.bs_run
            is_bs = np.zeros(len(q), bool)
            is_bs[inside] = b[pos[inside]] == 92
            alive &= inside & is_bs
            run[alive] += 1
            j += 1
        return q[run % 2 == 0]

    def _add(self, piece: memoryview) -> None:
        """Part of an element that spans reads, appended in place (a record of MiBs is copied once); past
        the cap only its first HEAD_BYTES are kept and the rest is counted as it streams by."""
        self.size += len(piece)
        if self.skipping or not piece:
            return
        if self.acc is None:
            self.acc = bytearray()
        if self.size > self.cap:  # too big to keep: remember its start, drop the rest as it streams by
            del self.acc[HEAD_BYTES:]
            self.acc += piece[:max(HEAD_BYTES - len(self.acc), 0)]
            self.skipping = True
        else:
            self.acc += piece

    def _end(self, last: memoryview) -> tuple[int, bytes | bytearray] | Skipped | None:
        """The element in progress, finished by `last` (None for the nothing before `]` of `[]` or after
        `[1,`): an element within one read is its slice of it; one that spans reads, its buffer, stripped
        in place."""
        if self.acc is None and not self.skipping:  # the common case: the whole element is in this read
            if len(last) > self.cap:
                return too_large("record", self.index, len(last), self.cap, bytes(last[:HEAD_BYTES]))
            text = bytes(last).strip(_WS)
            return (self.index, text) if text else None
        self._add(last)
        acc, size, skipping = self.acc, self.size, self.skipping
        self.acc, self.size, self.skipping = None, 0, False
        if skipping:
            return too_large("record", self.index, size, self.cap, bytes(acc))
        lead = 0
        while lead < len(acc) and acc[lead] in _WS:
            lead += 1
        del acc[:lead]  # (a bytearray drops its head and tail in place)
        while acc and acc[-1] in _WS:
            del acc[-1]
        return (self.index, acc) if acc else None

    def feed(self, chunk: bytes) -> list[tuple[int, bytes] | Skipped]:
        """The elements that end in this read (in order), up to where the text stops being an array
        (then `error` says why)."""
        out: list[tuple[int, bytes] | Skipped] = []
        b = np.frombuffer(chunk, np.uint8)
        quotes = self._real_quotes(b)
        tail = len(chunk) - len(chunk.rstrip(b"\\"))
        self.bs_run = tail + (self.bs_run if tail == len(chunk) else 0)
        s = np.flatnonzero(_STRUCT[b])
        s = s[(np.searchsorted(quotes, s) + self.in_str) % 2 == 0]  # outside strings
        if len(quotes) % 2:
            self.in_str = not self.in_str
        delta = _DELTA[b[s]]
        before = self.depth + np.cumsum(delta) - delta
        self.depth += int(delta.sum())
        # the positions that open, split or close the array: `[` at depth 0, `,` and `]` at depth 1
        cuts = s[((before == 0) & (b[s] == 91)) | ((before == 1) & ((b[s] == 44) | (b[s] == 93)))]
        del b, s, quotes, delta, before  # the scan's arrays (a read's size, several times) before the records
        view, start = memoryview(chunk), 0
        for pos in cuts.tolist():
            c = chunk[pos]
            if self.state == "before":
                if chunk[start:pos].strip(_WS) or c != 91:
                    self.error = "not a JSON array"
                    return out
                self.state, self.index = "inside", 1
            elif self.state == "inside":
                done = self._end(view[start:pos])
                if done is not None:
                    out.append(done)
                if c == 93:
                    self.state = "after"
                else:
                    self.index += 1
            else:
                self.error = "text after the array's closing `]`"
                return out
            start = pos + 1
        if self.state == "inside":
            self._add(view[start:])
        elif chunk[start:].strip(_WS):
            self.error = "text after the array's closing `]`" if self.state == "after" else "not a JSON array"
        return out

    def finish(self) -> list[Skipped]:
        """At the end of the file: an array that never closed loses only its unfinished last element."""
        if self.state == "after":
            return []
        if self.state == "before":
            raise ValueError("not a JSON array")
        head = bytes(self.acc[:HEAD_BYTES]) if self.acc is not None else b""
        if not head.strip(_WS):
            return [Skipped(0, "unreadable_file", "the file ends before the JSON array closes", b"")]
        return [Skipped(self.index, "invalid_json", f"record {self.index}: truncated JSON: the file ends before "
                        "this record and the array close", head)]


def array_records(stream, max_record_bytes: int, read_bytes: int = READ_BYTES) -> Iterator[tuple[int, bytes] | Skipped]:
    """The elements of the JSON array in binary `stream` as (1-based index, raw text), or `Skipped` for
    one that is over `max_record_bytes` or cut off by the end of the file. Raises ValueError (after the
    elements before it) where the text is not an array: nothing after that point can be located."""
    scan = _Scan(max_record_bytes)
    first = True
    while True:
        data = stream.read(read_bytes)
        if first:
            data, first = data.removeprefix(b"\xef\xbb\xbf"), False
        if not data:
            yield from scan.finish()
            return
        yield from scan.feed(data)
        if scan.error:
            raise ValueError(scan.error)
