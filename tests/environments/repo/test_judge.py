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


FRAME_BOMB = """import os, struct, sys
for _ in range({n}):
    d = b'{{"f": "x", "pad": "' + b'a' * {size} + b'"}}'
    os.write(int(sys.argv[2]), struct.pack(">I", len(d)) + d)
"""


@pytest.mark.parametrize("n, size", [(1, 1_040_000), (6, 200_000)])
def test_report_frames_past_the_output_cap_score_zero(repo_env, task, n, size):
    """Frames written to the report pipe at import, together past the sandbox's 1 MB output cap."""
    path, fixed, fix = _fix(task)
    bomb = format_call("write_file", {"path": path, "content": FRAME_BOMB.format(n=n, size=size) + fixed})
    v = repo_env.verify(task, fix + bomb + SUBMIT)
    assert v.reward == 0.0 and "forged report" in v.reason, v


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
