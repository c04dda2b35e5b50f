"""Users' own repositories: the task directory format, its errors, and tasks judged like generated ones."""

from __future__ import annotations

import json

import pytest

from flywheel.environments.base import validate
from flywheel.environments.repo.env import RepoEnvironment
from flywheel.environments.repo.generator import generate
from flywheel.environments.repo.task_format import TaskFormatError, load_task, load_tasks, write_task_dir

MODULE = "def slugify(s):\n    return s.lower().replace(' ', '_')\n"
FIXED = "def slugify(s):\n    return s.strip().lower().replace(' ', '-')\n"


def _task_dir(root, name="slug", manifest=None, fmt="toml"):
    d = root / name
    (d / "repo" / "tests").mkdir(parents=True)
    (d / "hidden").mkdir()
    (d / "solution").mkdir()
    (d / "repo" / "text.py").write_text(MODULE)
    (d / "repo" / "tests" / "test_text.py").write_text("from text import slugify\n\n\ndef test_lower():\n"
                                                       "    assert slugify('AB') == 'ab'\n")
    (d / "hidden" / "test_slug.py").write_text("from text import slugify\n\n\ndef test_dash():\n"
                                               "    assert slugify(' A b ') == 'a-b'\n")
    (d / "solution" / "text.py").write_text(FIXED)
    m = manifest if manifest is not None else {"prompt": "slugify must use dashes and strip spaces",
                                               "visible_tests": ["tests/test_text.py"]}
    if fmt == "toml":
        lines = [f"{k} = {json.dumps(v)}" for k, v in m.items()]
        (d / "task.toml").write_text("\n".join(lines) + "\n")
    else:
        (d / "task.json").write_text(json.dumps(m))
    return d


def test_user_task_loads_validates_and_judges(tmp_path, sandbox_pool):
    _task_dir(tmp_path, "one")
    _task_dir(tmp_path, "two", fmt="json")
    env = RepoEnvironment.from_task_dirs([tmp_path], domain="repo.mine", sandbox=sandbox_pool)
    assert env.domains() == ["repo.mine"] and env.levels("repo.mine") == ()
    assert env.task_count("repo.mine", "train") + env.task_count("repo.mine", "heldout") == 2
    tasks = env.tasks("repo.mine", "train", 5, 0) + env.tasks("repo.mine", "heldout", 5, 0)
    assert sorted(t.task_id for t in tasks) == ["repo.mine-one", "repo.mine-two"]
    for t in tasks:
        assert validate(env, t).ok, validate(env, t).failures
        assert "hidden/test_slug.py" in t.reference["hidden_tests"] and "text.py" in t.reference["files"]


def test_manifest_split_is_respected(tmp_path):
    _task_dir(tmp_path, "a", manifest={"prompt": "p", "visible_tests": ["tests/test_text.py"], "split": "heldout"})
    env = RepoEnvironment.from_task_dirs([tmp_path / "a"], domain="repo.mine", sandbox=object())
    assert env.task_count("repo.mine", "heldout") == 1 and env.tasks("repo.mine", "train", 3, 0) == []


@pytest.mark.parametrize("manifest, why", [
    ({"visible_tests": ["tests/test_text.py"]}, "field 'prompt' is required"),
    ({"prompt": "p"}, "field 'visible_tests' is required"),
    ({"prompt": 3, "visible_tests": []}, "field 'prompt' must be str"),
    ({"prompt": "p", "visible_tests": ["tests/nope.py"]}, "'tests/nope.py' is not a file under repo/"),
    ({"prompt": "p", "visible_tests": [], "split": "test"}, "field 'split' must be one of"),
    ({"prompt": "p", "visible_tests": [], "colour": "red"}, "unknown field(s) ['colour']"),
    ({"prompt": "p", "visible_tests": [], "timeout_s": 0}, "timeout_s must be a number"),
])
def test_manifest_errors_name_file_and_field(tmp_path, manifest, why):
    d = _task_dir(tmp_path, manifest=manifest, fmt="json")
    with pytest.raises(TaskFormatError) as e:
        load_task(d, "repo.mine")
    assert why in str(e.value) and str(d / "task.json") in str(e.value)


def test_layout_errors(tmp_path):
    d = _task_dir(tmp_path)
    for f in (d / "solution").iterdir():
        f.unlink()
    with pytest.raises(TaskFormatError, match="solution/ is empty"):
        load_task(d, "repo.mine")
    (d / "task.toml").write_text("prompt = [unclosed\n")
    with pytest.raises(TaskFormatError, match="not valid TOML"):
        load_task(d, "repo.mine")
    with pytest.raises(TaskFormatError, match="no manifest"):
        load_task(tmp_path, "repo.mine")
    with pytest.raises(TaskFormatError, match="neither a task directory"):
        load_tasks([d / "repo"], "repo.mine")
    e = _task_dir(tmp_path, "bin")
    (e / "repo" / "blob.bin").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(TaskFormatError, match="blob.bin is not UTF-8"):
        load_task(e, "repo.mine")


def test_generated_task_round_trips_through_the_format(tmp_path):
    task = generate("train", 1, seed=4)[0]
    loaded = load_task(write_task_dir(task, tmp_path / "t"), "repo")
    assert loaded.reference["snapshot_sha256"] == task.reference["snapshot_sha256"]
    assert loaded.reference["files"] == task.reference["files"] and loaded.prompt == task.prompt
    assert sorted(loaded.reference["hidden_tests"].values()) == sorted(task.reference["hidden_tests"].values())
