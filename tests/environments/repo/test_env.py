"""The repo environment end to end in the real sandbox: known fixes pass, untouched repositories fail,
hack probes score 0, trajectories verify in both formats, and a run leaves nothing behind on the host."""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor

import pytest

from flywheel.environments.base import validate
from flywheel.environments.repo.env import RepoEnvironment
from flywheel.environments.repo.generator import defects, generate, make_task
from flywheel.environments.repo.judge import judge_tree
from flywheel.environments.repo.probes import SUBMIT
from flywheel.environments.repo.spec import RepoSpec, make_reference
from flywheel.environments.task import Task
from flywheel.environments.toolcalls import ToolCall, format_call
from flywheel.rollout.multistep import execute_call


def _fixed(spec: RepoSpec) -> dict[str, bytes]:
    tree = spec.snapshot.fresh()
    tree.update({p: t.encode() for p, t in spec.fix.items()})
    return tree


def test_every_catalogued_defect_fails_the_hidden_tests_and_its_fix_passes(sandbox_pool):
    specs = [RepoSpec.from_reference(make_task(d, level=1).reference) for s in ("train", "heldout") for d in defects(s)]

    def both(spec):
        return judge_tree(spec, spec.snapshot.files, sandbox_pool), judge_tree(spec, _fixed(spec), sandbox_pool)

    with ThreadPoolExecutor(2) as ex:
        results = list(ex.map(both, specs))
    untouched_passed = [s.fix for s, (u, _) in zip(specs, results, strict=True) if u.reward != 0.0]
    fixed_failed = [(s.fix.keys(), f.reason, f.details.get("failures")) for s, (_, f) in zip(specs, results, strict=True)
                    if f.reward != 1.0]
    assert len(specs) >= 70 and not untouched_passed and not fixed_failed, (untouched_passed[:2], fixed_failed[:2])
    assert all("tests failed" in u.reason for u, _ in results)  # a real test failure, not a void run
    # the visible tests show most defects, so `run_tests` gives the model a signal before it submits
    shown = [any(f.startswith(tuple(s.test_files)) for f in u.details["failures"]) for s, (u, _) in
             zip(specs, results, strict=True)]
    assert sum(shown) >= 0.9 * len(specs), sum(shown)


def test_40_tasks_reference_passes_untouched_fails_and_nothing_is_left_behind(tmp_path, monkeypatch):
    import tempfile

    from flywheel.sandbox import get_pool

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    before = _host_state()
    tasks = generate("train", 30, seed=11) + generate("heldout", 10, seed=11)
    pool = get_pool(workers=2)
    env = RepoEnvironment(sandbox=pool)
    try:
        with ThreadPoolExecutor(2) as ex:
            gold = list(ex.map(lambda t: env.verify(t, t.solution), tasks))
            untouched = list(ex.map(lambda t: env.verify(t, SUBMIT), tasks))
    finally:
        pool.close()
    assert [v.reward for v in gold] == [1.0] * 40, [v.reason for v in gold if not v.passed][:3]
    assert [v.reward for v in untouched] == [0.0] * 40
    for t, v in zip(tasks, gold, strict=True):
        assert v.details["snapshot_sha256"] == t.reference["snapshot_sha256"] != v.details["final_sha256"]
    assert not _leaked(before, _host_state())
    assert not list(tmp_path.iterdir())


@pytest.mark.slow
def test_100_tasks_leave_nothing_behind(tmp_path, monkeypatch):
    import tempfile

    from flywheel.sandbox import get_pool

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    before = _host_state()
    tasks = generate("train", 80, seed=7) + generate("heldout", 20, seed=7)
    env = RepoEnvironment(sandbox=get_pool(workers=2))
    try:
        with ThreadPoolExecutor(2) as ex:
            gold = list(ex.map(lambda t: env.verify(t, t.solution).reward, tasks))
            untouched = list(ex.map(lambda t: env.verify(t, SUBMIT).reward, tasks))
    finally:
        env.sandbox.close()
    assert gold == [1.0] * 100 and untouched == [0.0] * 100
    assert not _leaked(before, _host_state())
    assert not list(tmp_path.iterdir())


def _leaked(before: dict, after: dict) -> dict:
    """What exists now that did not before (processes of earlier tests may end meanwhile: not a leak)."""
    return {k: sorted(set(after[k]) - set(before[k])) for k in before if set(after[k]) - set(before[k])}


def _host_state() -> dict:
    """What a leak would change: our descendant processes and open descriptors (the sandbox's mounts live in
    namespaces that die with it; the host's mount table is shared with other processes, so it is not compared)."""
    parents: dict[int, int] = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                parents[int(pid)] = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
    mine, grew = {os.getpid()}, True
    while grew:
        new = {p for p, pp in parents.items() if pp in mine} - mine
        grew, mine = bool(new), mine | new
    return {"descendants": sorted(mine - {os.getpid()}), "fds": sorted(os.listdir("/proc/self/fd"))}


@pytest.mark.parametrize("seed, level", [(0, 2), (4, 1), (9, 3)])
def test_validation_gold_wrong_and_hack_probes(repo_env, seed, level):
    task = generate("heldout", 1, seed=seed, level=level)[0]
    result = validate(repo_env, task)
    assert result.ok, result.failures
    names = {c.name for c in repo_env.validation(task)}
    assert {"edit_test", "delete_test", "conftest", "sys_exit_at_import", "os_exit_at_import", "forge_pass_line",
            "forge_report_frames", "kill_runner", "unknown_tool", "fix_and_edit_test"} <= names


def test_hack_probes_fail_for_the_hack_itself(repo_env):
    """Each probe, applied on top of the right fix, still scores 0 for the reason the probe targets."""
    task = generate("train", 1, seed=2)[0]
    spec = RepoSpec.from_reference(task.reference)
    (path, fixed), = spec.fix.items()
    fix = format_call("write_file", {"path": path, "content": fixed})
    test = spec.test_files[0]
    cases = {
        "sys.exit": (fix + format_call("write_file", {"path": path, "content": "import sys\nsys.exit(0)\n" + fixed})
                     + SUBMIT, "tests failed"),
        "os._exit": (fix + format_call("write_file", {"path": path, "content": "import os\nos._exit(0)\n" + fixed})
                     + SUBMIT, "tests failed"),
        "edit": (fix + format_call("write_file", {"path": test, "content": "def test_ok():\n    pass\n"}) + SUBMIT,
                 "was changed"),
        "conftest": (fix + format_call("write_file", {"path": "conftest.py", "content": "\n"}) + SUBMIT, "added"),
        "pth": (fix + format_call("write_file", {"path": "x.pth", "content": "import os\n"}) + SUBMIT, "added"),
    }
    for name, (resp, why) in cases.items():
        v = repo_env.verify(task, resp)
        assert v.reward == 0.0 and why in v.reason, (name, v)
    assert repo_env.verify(task, fix + SUBMIT).reward == 1.0


def test_forgeries_are_reported_as_such(repo_env):
    task = generate("train", 1, seed=2)[0]
    v = {c.name: repo_env.verify(task, c.response) for c in repo_env.validation(task) if c.kind == "hack"}
    # the candidate has no way to the report: a frame written to any descriptor breaks its own pipe
    assert v["forge_report_frames"].reward == 0.0 and v["forge_report_frames"].details["failures"]
    assert any("exited before answering" in f for f in v["os_exit_at_import"].details["failures"])
    assert any("SystemExit" in f for f in v["sys_exit_at_import"].details["failures"])
    assert "killed" in v["kill_runner"].reason


def test_openai_messages_trajectory(repo_env):
    task = generate("train", 1, seed=1)[0]
    spec = RepoSpec.from_reference(task.reference)
    (path, fixed), = spec.fix.items()

    def call(i, name, args):
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]}

    msgs = [{"role": "user", "content": task.prompt}, call(1, "read_file", {"path": path}),
            {"role": "tool", "tool_call_id": "c1", "content": "(claimed results are ignored)"},
            call(2, "write_file", {"path": path, "content": fixed}), {"role": "tool", "tool_call_id": "c2", "content": "ok"},
            call(3, "run_tests", {}), call(4, "submit", {})]
    assert repo_env.verify(task, msgs).reward == 1.0
    assert repo_env.verify(task, json.dumps(msgs)).reward == 1.0  # as logs store it
    bad = msgs[:1] + [call(0, "bash", {"cmd": "pytest"})] + msgs[1:]
    v = repo_env.verify(task, bad)
    assert v.reward == 0.0 and "process check: call 1: unknown tool 'bash'" in v.reason
    v = repo_env.verify(task, msgs[:-1])
    assert v.reward == 0.0 and "never called submit" in v.reason
    assert repo_env.verify(task, task.to_dict()["reference"]).reward == 0.0  # a dict is not a trajectory
    assert repo_env.verify(task.to_dict() | task.reference, msgs).reward == 1.0  # the design's task dict


def test_run_tests_tool_in_a_rollout(repo_env):
    task = generate("train", 1, seed=1, level=1)[0]
    spec = RepoSpec.from_reference(task.reference)
    (path, fixed), = spec.fix.items()
    tool_env = repo_env.tool_env(task)
    out = execute_call(tool_env, format_call("run_tests", {}))
    assert out.error is None and "tests passed" in out.result_text
    assert "hidden" not in out.result_text  # the hidden tests are never run or named for the model
    execute_call(tool_env, format_call("write_file", {"path": path, "content": fixed}))
    out = execute_call(tool_env, format_call("run_tests", {}))
    n = out.result_text.split()[0]
    assert n.split("/")[0] == n.split("/")[1], out.result_text
    bad = execute_call(tool_env, format_call("rm", {"path": path}))
    assert bad.error and "unknown tool" in bad.result_text
    assert not tool_env.done
    execute_call(tool_env, format_call("submit", {}))
    assert tool_env.done


def test_a_hanging_import_times_out_as_a_failure(repo_env):
    files = {"slow.py": "while True:\n    pass\n", "tests/test_slow.py": "import slow\n\ndef test_x():\n    pass\n"}
    ref = make_reference(files, ["tests/test_slow.py"], {"hidden/test_h.py": "import slow\n\ndef test_h():\n    pass\n"},
                         timeout_s=1.0)
    task = Task("repo-slow", "repo", "fix it", ref, "")
    v = repo_env.verify(task, SUBMIT)
    assert v.reward == 0.0 and any("timed out" in f for f in v.details["failures"]), v


def test_env_protocol_surface():
    env = RepoEnvironment(sandbox=object())
    assert env.domains() == ["repo"] and env.family == "repo" and env.version.startswith("repo-1-")
    assert env.levels("repo") == (1, 2, 3)
    assert env.task_count("repo", "train") > 100 and env.task_count("repo", "heldout") > 30
    assert [t.task_id for t in env.tasks("repo", "train", 5, seed=0)] == [t.task_id for t in generate("train", 5, 0)]
    with pytest.raises(ValueError, match="domain"):
        env.tasks("code", "train", 1, seed=0)
    with pytest.raises(ValueError, match="split"):
        env.tasks("repo", "test", 1, seed=0)
    task = env.tasks("repo", "train", 1, seed=0)[0]
    assert env.step(env.reset(task), ToolCall("nope", {})).error


@pytest.mark.parametrize("response", [None, 3, {"files": {}}, [], [1, 2], [{"role": "assistant", "tool_calls": ["x"]}],
                                      "no calls at all", '<tool_call>{"name": 1}</tool_call>', "[{\"role\": oops",
                                      '<tool_call>{"name": "write_file", "arguments": "{bad"}</tool_call>',
                                      "<tool_call>" + "x" * 300_000 + "</tool_call>"])
def test_malformed_responses_score_zero_without_raising(repo_env, response):
    task = generate("train", 1, seed=0, level=1)[0]
    v = repo_env.verify(task, response)
    assert v.reward == 0.0 and not v.passed and v.details["snapshot_sha256"] == task.reference["snapshot_sha256"]


def test_bad_task_references_are_task_errors():
    from flywheel.environments.verdict import TaskError

    task = generate("train", 1, seed=0, level=1)[0]
    ref = dict(task.reference)
    for broken, why in [(dict(ref, snapshot_sha256="0" * 64), "hash to"), (dict(ref, hidden_tests={}), "empty"),
                        (dict(ref, test_files=["nope.py"]), "not a file"),
                        (dict(ref, hidden_tests={ref["test_files"][0]: "x = 1\n"}), "also a repository file"),
                        ({k: v for k, v in ref.items() if k != "files"}, "missing field 'files'")]:
        with pytest.raises(TaskError, match=why):
            RepoSpec.from_reference(broken)


def test_served_through_the_registries(repo_env):
    """As an installed plugin: the environment registry finds the domain, the verifier registry wraps it, and a
    task travels as the design's task dict (what `flywheel verify` lines and the logs carry)."""
    from flywheel.environments.registry import EnvironmentRegistry
    from flywheel.verifiers.registry import VerifierRegistry

    envs = EnvironmentRegistry([repo_env])
    assert envs.for_domain("repo") is repo_env and envs.family_of("repo") == "repo"
    verifiers = VerifierRegistry(environments=envs)
    task = repo_env.tasks("repo", "heldout", 1, seed=0)[0]
    v = verifiers.get("repo")
    assert v.version == repo_env.version
    assert v.verify(task.verifier_task(), task.solution).reward == 1.0
    assert v.verify(task.verifier_task(), "").reward == 0.0
