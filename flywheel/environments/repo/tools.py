"""The repo environment's tools (OpenAI function-calling schemas) and the state they act on.

A rollout's state is an in-memory tree (path -> bytes) copied from the task's snapshot, so a rollout
leaves nothing on the host: files reach the sandbox only for the length of one `run_tests` call.
Tools: `list_files`, `read_file`, `write_file`, `patch_file` (replace one exact, unique snippet),
`delete_file`, `run_tests` (the visible tests, in the sandbox), `submit` (ends the episode).

Two kinds of failure: a call that breaks its schema, names no tool, uses an illegal path (one that would
be a file and a folder at once, e.g. a file `tests` next to `tests/test_x.py`), carries text that is not
Unicode (a lone surrogate) or comes after `submit` is *illegal* (the process check fails the verdict); a legal call that cannot apply
(reading a missing file, a patch whose snippet is absent) is an ordinary error result the model
sees and may recover from. Neither changes the tree.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from flywheel.environments.base import Observation
from flywheel.environments.repo.snapshot import (
    MAX_FILE_BYTES,
    MAX_FILES,
    Snapshot,
    collision,
    path_error,
    tree_hash,
)
from flywheel.environments.toolcalls import ToolCall
from flywheel.environments.toolschema import call_error, function_tool

_PATH = {"type": "string", "minLength": 1, "maxLength": 200, "description": "Path relative to the repository root."}
_TEXT = {"type": "string", "maxLength": MAX_FILE_BYTES}
TOOLS: list[dict[str, Any]] = [
    function_tool("list_files", "List the repository's files with their sizes in bytes."),
    function_tool("read_file", "Return a file's text.", {"path": _PATH}),
    function_tool("write_file", "Create or overwrite a file with the given text.", {"path": _PATH, "content": _TEXT}),
    function_tool("patch_file", "Replace the one occurrence of `old` in a file by `new` (`old` must occur exactly once).",
                  {"path": _PATH, "old": dict(_TEXT, minLength=1), "new": _TEXT}),
    function_tool("delete_file", "Delete a file.", {"path": _PATH}),
    function_tool("run_tests", "Run the repository's visible tests in a sandbox and report each result."),
    function_tool("submit", "Submit the repository as it is now; ends the episode."),
]
TOOL_NAMES = tuple(t["function"]["name"] for t in TOOLS)
MAX_READ_CHARS = 20_000

TestRunner = Callable[["RepoState"], str]
"""Runs the visible tests against the state's tree and returns the report text (None in a replay: not run)."""


@dataclass
class RepoState:
    """One rollout's working tree, where it started, and whether it was submitted."""

    snapshot: Snapshot
    files: dict[str, bytes]
    test_files: tuple[str, ...] = ()
    timeout_s: float = 10.0
    done: bool = False
    calls: int = 0
    illegal: list[str] = field(default_factory=list)

    @classmethod
    def start(cls, snapshot: Snapshot, test_files: tuple[str, ...] = (), timeout_s: float = 10.0) -> RepoState:
        return cls(snapshot, snapshot.fresh(), tuple(test_files), timeout_s)

    @property
    def sha256(self) -> str:
        return tree_hash(self.files)


def _encode_error(text: str) -> list[UnicodeEncodeError]:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        return [e]
    return []


def _illegal(state: RepoState, why: str) -> Observation:
    state.illegal.append(why)
    return Observation(f"error: {why}", done=state.done, error=why)


def apply_call(state: RepoState, call: ToolCall, run_tests: TestRunner | None) -> Observation:
    """Apply one call to `state` (see the module docstring); `run_tests` None skips executing the tests."""
    if state.done:
        return _illegal(state, f"call to {call.name!r} after submit")
    err = call_error(TOOLS, call)
    if err:
        return _illegal(state, err)
    args = call.arguments
    if "path" in args:
        perr = path_error(args["path"])
        if perr:
            return _illegal(state, f"{call.name}: {perr}")
    state.calls += 1
    name, files = call.name, state.files
    if name == "list_files":
        return Observation("\n".join(f"{p} ({len(b)} bytes)" for p, b in sorted(files.items())) or "(no files)")
    if name == "submit":
        state.done = True
        return Observation("submitted", done=True)
    if name == "run_tests":
        if run_tests is None:
            return Observation("(tests not run in replay)")
        return Observation(run_tests(state))
    path = args["path"]
    text_err = next((f"{name}: {k} is not Unicode text: {e.reason} at index {e.start}" for k in ("content", "old", "new")
                     if isinstance(args.get(k), str) for e in _encode_error(args[k])), None)
    if text_err:  # a lone surrogate cannot be a file's bytes: the call breaks its schema
        return _illegal(state, text_err)
    if name == "write_file" and path not in files:
        clash = collision(files, path)
        if clash:  # e.g. a file "tests" where the visible tests live: the tree could not be laid out
            return _illegal(state, f"write_file: {clash}")
    if name == "write_file":
        if path not in files and len(files) >= MAX_FILES:
            return Observation(f"error: the repository already holds {MAX_FILES} files")
        data = args["content"].encode("utf-8")
        if len(data) > MAX_FILE_BYTES:
            return Observation(f"error: {path} would exceed {MAX_FILE_BYTES} bytes")
        files[path] = data
        return Observation(f"wrote {path} ({len(files[path])} bytes)")
    if path not in files:
        return Observation(f"error: no file {path!r}")
    if name == "read_file":
        text = files[path].decode("utf-8", errors="replace")
        return Observation(text if len(text) <= MAX_READ_CHARS else text[:MAX_READ_CHARS] + "\n... (truncated)")
    if name == "delete_file":
        del files[path]
        return Observation(f"deleted {path}")
    text = files[path].decode("utf-8", errors="replace")  # patch_file
    n = text.count(args["old"])
    if n != 1:
        return Observation(f"error: `old` occurs {n} times in {path}; it must occur exactly once")
    new = text.replace(args["old"], args["new"]).encode("utf-8")
    if len(new) > MAX_FILE_BYTES:
        return Observation(f"error: {path} would exceed {MAX_FILE_BYTES} bytes")
    files[path] = new
    return Observation(f"patched {path}")
