"""Repository snapshots: an immutable file tree with one sha256 over its exact bytes.

Every rollout of a task starts from the same snapshot, and its hash goes into the verdict (and from
there into the reproducibility manifest), so "the same task" means byte-identical files. The hash
covers sorted paths and contents with length prefixes, so no two different trees share one.
Paths are checked here once for every caller: relative, normalised, no `..`, a safe alphabet.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

MAX_FILES = 200
MAX_FILE_BYTES = 256 * 1024
MAX_TREE_BYTES = 4 * 1024 * 1024
_PATH_RE = re.compile(r"^[A-Za-z0-9_.\-]+(/[A-Za-z0-9_.\-]+)*$")


def path_error(path: object) -> str | None:
    """Why `path` cannot name a file of a snapshot, or None when it can."""
    if not isinstance(path, str) or not path:
        return "path must be a non-empty string"
    if len(path) > 200:
        return f"path {path[:40]!r}... is longer than 200 characters"
    if not _PATH_RE.match(path):
        return f"path {path!r} must be relative, '/'-separated, of letters, digits, '_', '-' and '.'"
    if posixpath.normpath(path) != path or any(part in (".", "..") for part in path.split("/")):
        return f"path {path!r} must be normalised (no '.', '..' or empty parts)"
    if path == "main.py":
        return "path 'main.py' is reserved for the test runner"
    return None


def collision(files: Mapping[str, object], path: str) -> str | None:
    """Why `path` cannot be a file next to `files` (a file where a folder of theirs is, or under one of theirs)."""
    parts = path.split("/")
    for i in range(1, len(parts)):
        if "/".join(parts[:i]) in files:
            return f"{'/'.join(parts[:i])!r} is a file, so {path!r} cannot be under it"
    prefix = path + "/"
    inner = next((q for q in files if q.startswith(prefix)), None)
    return f"{path!r} is a folder (it holds {inner!r})" if inner is not None else None


def tree_hash(files: Mapping[str, bytes | str]) -> str:
    """sha256 over the tree: for each path in sorted order, its length, the path, the content's length, the content."""
    h = hashlib.sha256()
    for path in sorted(files):
        data = files[path]
        b = data.encode("utf-8") if isinstance(data, str) else bytes(data)
        p = path.encode("utf-8")
        h.update(len(p).to_bytes(4, "big") + p + len(b).to_bytes(8, "big"))
        h.update(b)
    return h.hexdigest()


def check_tree(files: Mapping[str, object], where: str = "snapshot") -> dict[str, bytes]:
    """The tree as path -> bytes, or ValueError naming the first bad path, size or type."""
    if len(files) > MAX_FILES:
        raise ValueError(f"{where}: {len(files)} files, more than {MAX_FILES}")
    out: dict[str, bytes] = {}
    total = 0
    for path, data in files.items():
        err = path_error(path)
        if err:
            raise ValueError(f"{where}: {err}")
        if isinstance(data, str):
            b = data.encode("utf-8")
        elif isinstance(data, (bytes, bytearray)):
            b = bytes(data)
        else:
            raise ValueError(f"{where}: file {path!r} must be text or bytes, got {type(data).__name__}")
        if len(b) > MAX_FILE_BYTES:
            raise ValueError(f"{where}: file {path!r} is {len(b)} bytes, more than {MAX_FILE_BYTES}")
        total += len(b)
        out[path] = b
    if total > MAX_TREE_BYTES:
        raise ValueError(f"{where}: {total} bytes in all, more than {MAX_TREE_BYTES}")
    return out


@dataclass(frozen=True)
class Snapshot:
    """An immutable tree (path -> bytes) and its hash. `fresh()` is a private mutable copy for one rollout."""

    files: Mapping[str, bytes]
    sha256: str

    @classmethod
    def of(cls, files: Mapping[str, bytes | str], where: str = "snapshot") -> Snapshot:
        tree = check_tree(files, where)
        return cls(MappingProxyType(dict(sorted(tree.items()))), tree_hash(tree))

    def fresh(self) -> dict[str, bytes]:
        """A mutable copy whose bytes equal the snapshot's (bytes are immutable: sharing them is safe)."""
        return dict(self.files)

    def text(self) -> dict[str, str]:
        """The tree as path -> text (JSON-friendly; snapshots hold UTF-8 text)."""
        return {p: b.decode("utf-8", errors="surrogateescape") for p, b in self.files.items()}
