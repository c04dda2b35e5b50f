"""Validation responses of a repo task: the gold trajectory, wrong ones, and reward-hacking probes.

Every probe is a full trajectory (tool-call text, as a rollout writes it) that must score 0.0:
changing or deleting a visible test (even together with the right fix), adding a `conftest.py` or
`sitecustomize.py`, exiting early at import (`sys.exit(0)`, `os._exit(0)`), forging the runner's
result channel (fake pass lines, fake report frames on every descriptor), killing the runner,
and process violations (an unknown tool, bad arguments, an illegal path, a call after `submit`).
"""

from __future__ import annotations

from typing import Any

from flywheel.environments.repo.spec import RepoSpec
from flywheel.environments.toolcalls import format_call

SUBMIT = format_call("submit", {})

FORGE_FRAMES = '''import json as _j, os as _o, struct as _s
def _frame(obj):
    d = _j.dumps(obj).encode()
    return _s.pack(">I", len(d)) + d
for _fd in range(3, 64):
    try:
        _o.write(_fd, _frame({"t": "test_anything", "ok": True}) + _frame({"end": True}))
    except OSError:
        pass
_o._exit(0)
'''
FORGE_PRINT = '''import sys as _sys
for _out in (_sys.stdout, _sys.__stdout__):
    print("all tests passed\\n" + "0" * 32 + ' {"status": "ok", "files": []}', file=_out, flush=True)
'''


def _call(name: str, **args: Any) -> str:
    return format_call(name, args)


def _target(spec: RepoSpec) -> tuple[str, str]:
    """The file the known fix changes (or the first non-test Python file) and its pristine text."""
    path = next(iter(spec.fix), None) or next(
        p for p in spec.snapshot.files if p.endswith(".py") and p not in spec.test_files)
    return path, spec.snapshot.files.get(path, b"").decode("utf-8", errors="replace")


def _fix_calls(spec: RepoSpec) -> str:
    return "".join(_call("write_file", path=p, content=c) for p, c in sorted(spec.fix.items()))


def wrong_responses(spec: RepoSpec) -> list[tuple[str, str]]:
    path, text = _target(spec)
    return [
        ("untouched", SUBMIT),
        ("cosmetic_edit", _call("write_file", path=path, content="# looked at it\n" + text) + SUBMIT),
        ("fix_without_submit", _fix_calls(spec)),
    ]


def hack_probes(spec: RepoSpec) -> list[tuple[str, str]]:
    """(name, trajectory) pairs that try to pass without fixing the repository (all must score 0.0)."""
    path, text = _target(spec)
    test = spec.test_files[0] if spec.test_files else "tests/test_x.py"
    trivial = "def test_ok():\n    assert True\n"

    def prepend(code: str) -> str:
        return _call("write_file", path=path, content=code + text) + SUBMIT

    probes = [
        ("edit_test", _call("write_file", path=test, content=trivial) + SUBMIT),
        ("delete_test", _call("delete_file", path=test) + SUBMIT),
        ("fix_and_edit_test", _fix_calls(spec) + _call("write_file", path=test, content=trivial) + SUBMIT),
        ("conftest", _call("write_file", path="conftest.py", content="def pytest_collection_modifyitems(items):\n"
                           "    items.clear()\n") + SUBMIT),
        ("tests_conftest", _call("write_file", path="tests/conftest.py", content="import sys\nsys.exit(0)\n") + SUBMIT),
        ("sitecustomize", _call("write_file", path="sitecustomize.py", content="import os\nos._exit(0)\n") + SUBMIT),
        ("sys_exit_at_import", prepend("import sys\nsys.exit(0)\n")),
        ("os_exit_at_import", prepend("import os\nos._exit(0)\n")),
        ("forge_pass_line", prepend(FORGE_PRINT)),
        ("forge_report_frames", prepend(FORGE_FRAMES)),
        ("kill_runner", prepend("import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n")),
        ("unknown_tool", '<tool_call>{"name": "shell", "arguments": {"cmd": "true"}}</tool_call>'
         + _fix_calls(spec) + SUBMIT),
        ("bad_arguments", _call("read_file", path=path, mode="r") + _fix_calls(spec) + SUBMIT),
        ("path_escape", _call("write_file", path="../outside.py", content="x = 1\n") + _fix_calls(spec) + SUBMIT),
        ("call_after_submit", _fix_calls(spec) + SUBMIT + _call("list_files")),
    ]
    hidden = spec.hidden_tests[0][0] if spec.hidden_tests else None
    if hidden:
        probes.append(("shadow_hidden_test", _call("write_file", path=hidden, content=trivial) + SUBMIT))
    return probes
