"""The file tools: what each does to the tree, and which calls are illegal (the process check) or mere errors."""

from __future__ import annotations

import pytest

from flywheel.environments.repo.snapshot import Snapshot
from flywheel.environments.repo.tools import TOOL_NAMES, TOOLS, RepoState, apply_call
from flywheel.environments.toolcalls import ToolCall
from flywheel.environments.toolschema import tool_name

TREE = {"calc.py": "def add(a, b):\n    return a - b\n", "tests/test_calc.py": "from calc import add\n"}


def _state() -> RepoState:
    return RepoState.start(Snapshot.of(TREE), ("tests/test_calc.py",))


def _do(state: RepoState, name: str, **args):
    return apply_call(state, ToolCall(name, args), lambda s: f"ran {sorted(s.files)}")


def test_schemas_are_openai_function_tools():
    assert [tool_name(t) for t in TOOLS] == list(TOOL_NAMES)
    for t in TOOLS:
        assert t["type"] == "function"
        params = t["function"]["parameters"]
        assert params["type"] == "object" and params["additionalProperties"] is False
        assert set(params["required"]) == set(params["properties"])


def test_list_read_write_patch_delete():
    s = _state()
    assert _do(s, "list_files").content.splitlines() == ["calc.py (32 bytes)", "tests/test_calc.py (21 bytes)"]
    assert _do(s, "read_file", path="calc.py").content == TREE["calc.py"]
    assert _do(s, "patch_file", path="calc.py", old="a - b", new="a + b").content == "patched calc.py"
    assert s.files["calc.py"] == b"def add(a, b):\n    return a + b\n"
    assert _do(s, "write_file", path="pkg/new.py", content="X = 1\n").error is None
    assert s.files["pkg/new.py"] == b"X = 1\n"
    assert _do(s, "delete_file", path="pkg/new.py").content == "deleted pkg/new.py"
    assert "pkg/new.py" not in s.files
    assert _do(s, "run_tests").content == "ran ['calc.py', 'tests/test_calc.py']"
    assert s.sha256 != s.snapshot.sha256


def test_operational_errors_are_results_not_illegal():
    s = _state()
    before = dict(s.files)
    for obs in (_do(s, "read_file", path="nope.py"), _do(s, "patch_file", path="calc.py", old="zzz", new="y"),
                _do(s, "patch_file", path="tests/test_calc.py", old="a", new="b"),  # 'a' occurs 3 times
                _do(s, "delete_file", path="nope.py")):
        assert obs.error is None and obs.content.startswith("error:"), obs
    assert s.files == before and not s.illegal


@pytest.mark.parametrize("call, why", [
    (ToolCall("shell", {"cmd": "ls"}), "unknown tool 'shell'"),
    (ToolCall("read_file", {}), "missing required ['path']"),
    (ToolCall("read_file", {"path": "calc.py", "lines": 3}), "unexpected ['lines']"),
    (ToolCall("write_file", {"path": "a.py", "content": 3}), "must be string"),
    (ToolCall("write_file", {"path": "/etc/passwd", "content": ""}), "must be relative"),
    (ToolCall("write_file", {"path": "../up.py", "content": ""}), "normalised"),
    (ToolCall("write_file", {"path": "main.py", "content": ""}), "reserved"),
    (ToolCall("patch_file", {"path": "calc.py", "old": "", "new": "x"}), "at least 1"),
    (ToolCall("", {}, "{", "tool call is not valid JSON: x"), "not valid JSON"),
])
def test_illegal_calls_change_nothing(call, why):
    s = _state()
    obs = apply_call(s, call, None)
    assert obs.error and why in obs.error, obs
    assert s.files == dict(s.snapshot.files) and s.illegal == [obs.error]


def test_submit_ends_and_later_calls_are_illegal():
    s = _state()
    assert _do(s, "submit").done and s.done
    obs = _do(s, "list_files")
    assert obs.error == "call to 'list_files' after submit"


def test_replay_does_not_run_tests():
    s = _state()
    assert apply_call(s, ToolCall("run_tests", {}), None).content == "(tests not run in replay)"
