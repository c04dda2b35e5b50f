"""Where the logs are: a file, a folder or a URI (`file://`, `s3://`, `gs://`, ...) resolved to the
log files under it, each with its format and the name recorded in the warehouse."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pyarrow.fs as pafs

JSONL_SUFFIXES = (".jsonl", ".ndjson", ".json", ".jsonl.gz", ".ndjson.gz", ".json.gz")
PARQUET_SUFFIXES = (".parquet", ".pq")


@dataclass(frozen=True)
class SourceFile:
    """One file to read: the filesystem, its path there, the name recorded in the warehouse."""

    fs: pafs.FileSystem
    path: str
    name: str
    format: str  # "jsonl" | "parquet"


def _format_of(path: str) -> str | None:
    p = path.lower()
    if p.endswith(PARQUET_SUFFIXES):
        return "parquet"
    if p.endswith(JSONL_SUFFIXES):
        return "jsonl"
    return None


def list_sources(source: str | os.PathLike[str]) -> list[SourceFile]:
    """Resolve a file, folder or URI (`file://`, `s3://`, `gs://`, ...) to the log files under it.

    Raises FileNotFoundError when nothing exists there; a folder is searched recursively (each real
    folder once, however many links lead to it) for
    `*.jsonl[.gz]`, `*.ndjson`, `*.json[.gz]` (JSON Lines, or one JSON array) and `*.parquet`, in sorted order.
    """
    s = os.fspath(source)
    if "://" in s:
        fs, path = pafs.FileSystem.from_uri(s)
        scheme = s.split("://", 1)[0]
        prefix = "" if isinstance(fs, pafs.LocalFileSystem) else f"{scheme}://"
    else:
        fs, path, prefix = pafs.LocalFileSystem(), str(Path(s).resolve()), ""
    info = fs.get_file_info(path)
    if info.type == pafs.FileType.NotFound:
        raise FileNotFoundError(f"no such file or folder: {s}")
    if info.type == pafs.FileType.File:
        fmt = _format_of(path) or "jsonl"  # an explicitly named file is read as JSONL unless .parquet
        return [SourceFile(fs, path, prefix + path, fmt)]
    if isinstance(fs, pafs.LocalFileSystem):
        paths = _local_files(path)
    else:
        paths = [i.path for i in fs.get_file_info(pafs.FileSelector(path, recursive=True))
                 if i.type == pafs.FileType.File]
    out = []
    for p in sorted(paths):
        fmt = _format_of(p)
        if fmt and not Path(p).name.startswith((".", "_")):
            out.append(SourceFile(fs, p, prefix + p, fmt))
    return out


def _local_files(path: str) -> list[str]:
    """Every non-folder entry under the local folder `path`, following folder links, but into each real
    folder once: a link loop (or a second link to a folder already walked) is not walked again. (File
    links, and links that leave the folder, are for `guard` to judge.)"""
    seen: set[str] = set()
    out = []
    for root, dirs, files in os.walk(path, followlinks=True):
        real = os.path.realpath(root)
        if real in seen:
            dirs[:] = []
            continue
        seen.add(real)
        out.extend(os.path.join(root, f) for f in files)
    return out
