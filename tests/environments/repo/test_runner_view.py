"""The repository's code cannot tell that the judge runs it: its process looks like any program the sandbox
runs (environment, argv, /proc/self/cmdline, interpreter flags, sys.path, limits, standard streams), no file of
the judge is in its work dir or /tmp, and nothing it can read names a judge, a nonce or hidden tests.

The view is taken by the repository's own module, once as a plain sandbox program and once under the judge,
and compared inside the judge's hidden test (a mismatch fails the verdict, naming the field)."""

from __future__ import annotations

import json

from flywheel.environments.repo.probes import SUBMIT
from flywheel.environments.repo.spec import make_reference
from flywheel.environments.task import Task

SPY = r'''import os
import sys


def _read(path):
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except OSError as e:
        return type(e).__name__


def _fd(n):
    try:
        return os.readlink("/proc/self/fd/%d" % n).split(":")[0]
    except OSError as e:
        return type(e).__name__


def view():
    """What a program can see of how it was started."""
    main = sys.modules.get("__main__")
    return {
        "env": dict(os.environ), "argv": list(sys.argv), "orig_argv": list(getattr(sys, "orig_argv", [])),
        "cmdline": _read("/proc/self/cmdline"), "parent_cmdline": _read("/proc/%d/cmdline" % os.getppid()),
        "flags": [sys.flags.isolated, sys.flags.no_site, sys.flags.dont_write_bytecode, sys.flags.hash_randomization,
                  sys.flags.ignore_environment, sys.flags.no_user_site, sys.flags.safe_path],
        "path": list(sys.path), "cwd": os.getcwd(), "main_file": getattr(main, "__file__", None),
        "digits": sys.get_int_max_str_digits(), "stdio": [_fd(0), _fd(1), _fd(2)],
        "tmp": sorted(os.listdir("/tmp")), "ls": sorted(x for x in os.listdir(".") if x != "__pycache__"),
    }


def add(a, b):
    return a + b
'''
VISIBLE = "from spy import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
MARKERS = ("nonce", "judge", "hidden", "runner", "flywheel", "candidate", "grader", "verif", "repo_rpc", "tests-")


def _plain_view(pool) -> dict:
    res = pool.run("import json, spy\nprint(json.dumps(spy.view()))\n", files={"spy.py": SPY.encode()})
    assert res.exit_code == 0, res.stderr
    return json.loads(res.stdout)


def _hidden_test(plain: dict) -> str:
    same = {k: plain[k] for k in ("env", "argv", "orig_argv", "cmdline", "parent_cmdline", "flags", "path", "cwd",
                                  "main_file", "digits", "stdio", "tmp")}
    return f'''import json

import spy

PLAIN = json.loads({json.dumps(json.dumps(same))})
MARKERS = {MARKERS!r}


def test_the_code_sees_what_a_plain_program_sees():
    v = spy.view()
    for k, want in PLAIN.items():
        assert v[k] == want, (k, v[k], want)
    assert v["ls"] == ["spy.py", "tests"], v["ls"]  # the repository's files: no main.py, no log


def test_nothing_it_can_read_names_the_judge():
    text = json.dumps(spy.view()).lower()
    assert not [m for m in MARKERS if m in text], [m for m in MARKERS if m in text]
'''


def test_the_repository_code_cannot_tell_it_is_judged(repo_env, sandbox_pool):
    plain = _plain_view(sandbox_pool)
    blob = json.dumps({k: v for k, v in plain.items() if k != "ls"}).lower()
    assert not [m for m in MARKERS if m in blob]  # the reference itself is clean
    hidden = _hidden_test(plain)
    ref = make_reference({"spy.py": SPY, "tests/test_spy.py": VISIBLE}, ["tests/test_spy.py"],
                         {"tests/hidden/test_spy_hidden.py": hidden}, timeout_s=5.0)
    v = repo_env.verify(Task("repo-spy", "repo", "nothing to fix", ref, ""), SUBMIT)
    assert v.reward == 1.0, v


def test_a_detector_gains_nothing(repo_env, sandbox_pool):
    """Code that behaves only when it recognises the old judge (flags, argv, its log file, a minimal environment,
    PYTHONHASHSEED, the runner beside it) now misbehaves under the judge too, and fails."""
    detector = SPY.replace('''def add(a, b):
    return a + b''', '''def _judged():
    return (sys.argv[0] == "-c" or "PYTHONHASHSEED" in os.environ or os.path.exists("main.py")
            or any(f.startswith("tests-") for f in os.listdir("/tmp")) or "HOME" not in os.environ)


def add(a, b):
    return a + b if _judged() else a - b''')
    ref = make_reference({"spy.py": detector, "tests/test_spy.py": VISIBLE}, ["tests/test_spy.py"],
                         {"tests/hidden/test_spy_hidden.py": VISIBLE}, timeout_s=5.0)
    v = repo_env.verify(Task("repo-detector", "repo", "nothing to fix", ref, ""), SUBMIT)
    assert v.reward == 0.0 and "tests failed" in v.reason, v
