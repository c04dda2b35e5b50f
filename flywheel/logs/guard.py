"""Which listed log files may be read: a symlink whose target leaves the ingested folder is refused,
and a real file reached twice (through links, or a link loop) is read once."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pyarrow.fs as pafs

from flywheel.logs.sources import SourceFile


def guard_sources(source: str | os.PathLike[str], sources: list[SourceFile]) -> Iterator[tuple[SourceFile, str]]:
    """Yield `(file, "")` for each file to read and `(file, reason)` for each refused one.

    Only local files are checked (object stores have no links). The root is the real path of
    `source`; a file whose real path is outside it, or the same real file as one yielded before,
    is refused with the reason."""
    s = os.fspath(source)
    if s.startswith("file://"):
        s = s[len("file://"):]
    root = os.path.realpath(s)
    seen: dict[str, str] = {}
    for src in sources:
        if not isinstance(src.fs, pafs.LocalFileSystem):
            yield src, ""
            continue
        try:
            real = os.path.realpath(src.path, strict=True)
        except (OSError, RuntimeError) as e:  # dangling link or a loop
            yield src, f"file could not be resolved ({e}); not read"
            continue
        if real != root and not real.startswith(root.rstrip(os.sep) + os.sep):
            yield src, f"symlink leaves the ingested folder (to {real}); not read"
            continue
        if real in seen:
            yield src, f"same file as {seen[real]} (a link); read once"
            continue
        seen[real] = src.name
        yield src, ""
