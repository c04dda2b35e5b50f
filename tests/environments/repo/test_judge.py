"""Faults the candidate can cause in the repo judge score 0.0 with a reason; none is an infrastructure error."""

from __future__ import annotations

import pytest

from flywheel.environments.repo.generator import generate
from flywheel.environments.repo.judge import judge_tree
from flywheel.environments.repo.probes import SUBMIT
from flywheel.environments.repo.spec import RepoSpec
from flywheel.environments.repo.tools import RepoState, apply_call
from flywheel.environments.toolcalls import ToolCall, format_call


@pytest.fixture(scope="module")
def task():
    return generate("train", 1, seed=2)[0]


def _fix(task) -> tuple[str, str, str]:
    spec = RepoSpec.from_reference(task.reference)
    (path, fixed), = spec.fix.items()
    return path, fixed, format_call("write_file", {"path": path, "content": fixed})


FRAME_BOMB = """import os, struct
d = b'{{"f": "x", "t": "test_x", "ok": true, "pad": "' + b'a' * {size} + b'"}}'
for _ in range({n}):
    for fd in range(3, 32):
        try:
            os.write(fd, struct.pack(">I", len(d)) + d)
        except OSError:
            pass
"""


@pytest.mark.parametrize("n, size", [(1, 1_040_000), (6, 200_000)])
def test_report_frames_past_the_output_cap_score_zero(repo_env, task, n, size):
    """Frames written at import to every descriptor, together past the sandbox's 1 MB output cap: the report is
    the runner's own (the candidate holds no descriptor of it), so the flood only breaks the candidate's pipe."""
    path, fixed, fix = _fix(task)
    bomb = format_call("write_file", {"path": path, "content": FRAME_BOMB.format(n=n, size=size) + fixed})
    v = repo_env.verify(task, fix + bomb + SUBMIT)
    assert v.reward == 0.0 and "call protocol" in " ".join(v.details["failures"]), v


def test_a_lone_surrogate_in_write_file_is_an_illegal_call(repo_env, task):
    path, _, fix = _fix(task)
    state = RepoState.start(RepoSpec.from_reference(task.reference).snapshot)
    obs = apply_call(state, ToolCall("write_file", {"path": path, "content": "x = '\ud800'\n"}), None)
    assert obs.error and "not Unicode text" in obs.error and state.files == dict(state.snapshot.files)
    for call in (format_call("write_file", {"path": path, "content": "\udcff"}),
                 format_call("patch_file", {"path": path, "old": "def", "new": "\ud800"})):
        v = repo_env.verify(task, fix + call + SUBMIT)
        assert v.reward == 0.0 and "not Unicode text" in v.reason, v


def test_a_path_colliding_with_a_visible_test_scores_zero(repo_env, task):
    spec = RepoSpec.from_reference(task.reference)
    folder = spec.test_files[0].rsplit("/", 1)[0]
    _, _, fix = _fix(task)
    v = repo_env.verify(task, fix + format_call("write_file", {"path": folder, "content": "x"}) + SUBMIT)
    assert v.reward == 0.0 and "is a folder" in v.reason, v
    v = repo_env.verify(task, fix + format_call("write_file", {"path": spec.test_files[0] + "/x.py", "content": "x"})
                        + SUBMIT)
    assert v.reward == 0.0 and "is a file" in v.reason, v
    # a tree handed to the judge directly (not built by the tools) is checked there too
    tree = {**spec.snapshot.fresh(), **{p: t.encode() for p, t in spec.fix.items()}}
    assert judge_tree(spec, tree, repo_env.sandbox).reward == 1.0
    tree[spec.test_files[0] + "/x.py"] = b"x"
    v = judge_tree(spec, tree, repo_env.sandbox)
    assert v.reward == 0.0 and "cannot be under it" in v.reason, v


CALC = "def add(a, b):\n    return a - b\n"
VISIBLE = "from calc import add\n\n\ndef test_zero():\n    assert add(0, 0) == 0\n"
HIDDEN = '''import unittest

from calc import add


def test_add():
    assert add(2, 3) == 5
    assert add(-1, 1) == 0


class TestAdd(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)
'''
ATTACKS = {
    "always_true_eq": "class Any:\n    def __eq__(self, o):\n        return True\n    __hash__ = None\n\n\n"
                      "def add(a, b):\n    return Any()\n",
    "nulled_unittest": "import unittest\nunittest.TestCase.assertEqual = lambda *a, **k: None\n"
                       "import builtins\nbuiltins.AssertionError = type('Nope', (Exception,), {})\n" + CALC,
    "profile_swaps_tests": '''import sys, types

def _swap(frame, event, arg):
    for m in list(sys.modules.values()):
        for k, v in list(getattr(m, "__dict__", {}).items()):
            if k.startswith("test") and isinstance(v, types.FunctionType):
                v.__code__ = (lambda: None).__code__
            if k.startswith("Test") and isinstance(v, type):
                for a in list(vars(v)):
                    if a.startswith("test"):
                        setattr(v, a, lambda self: None)

sys.setprofile(_swap)
''' + CALC,
}


@pytest.fixture(scope="module")
def calc_task():
    from flywheel.environments.repo.spec import make_reference
    from flywheel.environments.task import Task

    ref = make_reference({"calc.py": CALC, "tests/test_calc.py": VISIBLE}, ["tests/test_calc.py"],
                         {"tests/hidden/test_calc_hidden.py": HIDDEN}, timeout_s=5.0)
    return Task("repo-calc", "repo", "fix add", ref, "")


def _write(path, content):
    return format_call("write_file", {"path": path, "content": content})


def test_the_tests_run_where_the_candidate_cannot_patch_them(repo_env, calc_task):
    fixed = "def add(a, b):\n    return a + b\n"
    assert repo_env.verify(calc_task, _write("calc.py", fixed) + SUBMIT).reward == 1.0  # the honest fix
    assert repo_env.verify(calc_task, SUBMIT).reward == 0.0
    for name, src in ATTACKS.items():
        v = repo_env.verify(calc_task, _write("calc.py", src) + SUBMIT)
        assert v.reward == 0.0 and "tests failed" in v.reason, (name, v)


@pytest.mark.parametrize("module", ["subprocess", "json", "unittest", "traceback", "types"])
def test_a_repository_file_named_like_the_standard_library_never_runs_in_the_runner(repo_env, calc_task, module):
    """The work dir leaves the runner's path first: `subprocess.py` killed the old runner (an infra error)."""
    fixed = "def add(a, b):\n    return a + b\n"
    shadow = _write(f"{module}.py", "raise SystemExit(0)\n")
    assert repo_env.verify(calc_task, shadow + _write("calc.py", fixed) + SUBMIT).reward == 1.0
    v = repo_env.verify(calc_task, shadow + SUBMIT)
    assert v.reward == 0.0 and "tests failed" in v.reason, v


BOX = '''class Node:
    def __init__(self, value):
        self.value = value


class Box:
    def __init__(self):
        self.node = Node(3)
        self.items = []

    def get(self):
        return self.node

    def add(self, *xs):
        self.items.extend(xs)
        return self

    def __len__(self):
        return len(self.items)

    def __iter__(self):
        return iter(self.items)

    def __contains__(self, x):
        return x in self.items

    def __getitem__(self, i):
        return self.items[i]
'''
BOX_TEST = '''from box import Box


def test_objects_keep_identity_and_behave():
    b = Box()
    assert b.get() is b.get() and b.get() == b.node and b.get().value == 3
    assert b.add(1, 2).add(3) is b and len(b) == 3 and list(b) == [1, 2, 3] and 2 in b and b[-1] == 3
    b.node.value = 5
    assert b.get().value == 5 and sorted(b, key=lambda x: -x) == [3, 2, 1]
'''


def test_honest_objects_still_pass_across_the_process_boundary(repo_env):
    """False negatives: identity, attributes, chaining, len/iter/in/[] and callbacks on the repository's objects."""
    from flywheel.environments.repo.spec import make_reference
    from flywheel.environments.task import Task

    ref = make_reference({"box.py": BOX, "tests/test_box.py": BOX_TEST}, ["tests/test_box.py"],
                         {"tests/hidden/test_box_hidden.py": BOX_TEST}, timeout_s=5.0)
    v = repo_env.verify(Task("repo-box", "repo", "nothing to fix", ref, ""), SUBMIT)
    assert v.reward == 1.0, v


STACK = '''class StackError(Exception):
    """The stack's own errors."""


class StackEmpty(StackError, LookupError):
    def __init__(self, op):
        super().__init__("cannot %s: the stack is empty" % op)


class Stack:
    def __init__(self):
        self.items = []

    def push(self, x):
        self.items.append(x)

    def pop(self):
        if not self.items:
            raise StackEmpty("pop")
        return self.items.pop()

    def peek(self):
        if not self.items:
            raise StackError("héllo " + "ü" * 600)
        return self.items[-1]

    def drain(self):
        while self.items:
            yield self.items.pop()
        raise StackEmpty("drain")
'''
STACK_TEST = '''import unittest

import stack
from stack import Stack, StackEmpty, StackError


def test_the_repositorys_exceptions_keep_their_type_and_message():
    s = Stack()
    try:
        s.pop()
    except StackEmpty as e:
        assert type(e).__name__ == "StackEmpty" and type(e).__module__ == "stack"
        assert str(e) == "cannot pop: the stack is empty" and e.args == ("cannot pop: the stack is empty",)
        assert isinstance(e, StackError) and isinstance(e, LookupError) and isinstance(e, Exception)
        assert stack.StackEmpty is StackEmpty and issubclass(StackEmpty, StackError)
    else:
        raise AssertionError("no exception")
    try:
        s.peek()
    except StackError as e:
        assert not isinstance(e, StackEmpty) and str(e).startswith("héllo üü")
    try:
        s.missing
    except AttributeError:
        pass
    s.push(1)
    assert s.pop() == 1
    s.push(2)
    got = []
    try:
        for x in s.drain():  # raised mid-iteration, from the candidate's generator
            got.append(x)
    except StackEmpty as e:
        assert got in ([], [2]) and "drain" in str(e)  # items come in chunks: the error may come first
    else:
        raise AssertionError("no exception")


class TestStack(unittest.TestCase):
    def test_assert_raises(self):
        with self.assertRaises(StackEmpty):
            Stack().pop()
        with self.assertRaisesRegex(LookupError, "stack is empty"):
            Stack().pop()
'''


def test_the_repositorys_own_exceptions_cross_by_type_and_message(repo_env):
    """A custom exception used to cross as RuntimeError: `except StackEmpty` / assertRaises(StackEmpty) failed for an
    honest repository. Its type (and chain, and built-in bases) and message now cross as data."""
    from flywheel.environments.repo.spec import make_reference
    from flywheel.environments.task import Task

    ref = make_reference({"stack.py": STACK, "tests/test_stack.py": STACK_TEST}, ["tests/test_stack.py"],
                         {"tests/hidden/test_stack_hidden.py": STACK_TEST}, timeout_s=5.0)
    v = repo_env.verify(Task("repo-stack", "repo", "nothing to fix", ref, ""), SUBMIT)
    assert v.reward == 1.0, v
    wrong = STACK.replace('raise StackEmpty("pop")', 'raise StackError("pop")')  # the wrong class: fails
    v = repo_env.verify(Task("repo-stack", "repo", "x", ref, ""), _write("stack.py", wrong) + SUBMIT)
    assert v.reward == 0.0 and "StackError: pop" in str(v.details) + v.reason, v


def test_a_forged_exception_description_is_only_data():
    """The runner builds exception classes from names alone: a description naming odd bases or odd names gives a
    plain class (never StopIteration, which would end a test's loop silently, nor a candidate's code)."""
    from flywheel.environments.repo.judge import RPC_SOURCE

    ns: dict = {"__name__": "_repo_rpc"}
    exec(compile(RPC_SOURCE, "_repo_rpc.py", "exec"), ns)
    make, rebuild = ns["local_exception_class"], ns["rebuild"]
    assert make({"c": [], "b": ["StopIteration"]}) is Exception
    assert make({"c": [["m", "E"]], "b": ["SystemExit", "os.system"]}).__mro__[1] is Exception
    assert make({"c": [["m", "E; import os"]], "b": []}).__qualname__ == "RepositoryError"
    assert make("junk") is Exception and make({"c": [[1]], "b": []}) is Exception
    e = rebuild("RepositoryException", '{"c": [["stack", "StackEmpty"]], "b": ["KeyError"], "m": "empty"}')
    assert type(e).__name__ == "StackEmpty" and isinstance(e, KeyError) and e.args == ("empty",)
    assert type(rebuild("RepositoryException", "{cut")) is RuntimeError  # unparsable: as before
    assert type(rebuild("ValueError", "x")) is ValueError
