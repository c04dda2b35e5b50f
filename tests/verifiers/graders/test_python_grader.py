"""`python` graders run in flywheel's sandbox: never in this process, with its limits; a grader that raises or
times out scores 0, a forged second result line fails, a malformed spec is refused when built."""

from __future__ import annotations

import os

import pytest

from flywheel.environments.verdict import TaskError
from flywheel.verifiers.graders import GraderConfig, Runtime, build_grader
from flywheel.verifiers.graders.template import sample_of


@pytest.fixture(scope="module")
def runtime():
    return Runtime(GraderConfig(python_timeout_s=3.0))


def _grade(runtime, source: str, response: str = "4", item: dict | None = None):
    g = build_grader({"type": "python", "name": "p", "source": source}, runtime)
    return g.grade(item or {"answer": "4"}, sample_of(response))


def test_grades_in_a_separate_sandboxed_process(runtime, tmp_path) -> None:
    marker = tmp_path / "touched"
    src = ("import os\n"
           "def grade(sample, item):\n"
           f"    open({str(marker)!r}, 'w').write('x')\n"  # the host's tmp dir is not in the sandbox
           "    return 1.0\n")
    g = _grade(runtime, src)
    assert g.score == 0.0 and "raised" in g.reason and not marker.exists()
    pid = _grade(runtime, f"import os\ndef grade(sample, item):\n    return float(os.getpid() != {os.getpid()})\n")
    assert pid.score == 1.0
    ok = _grade(runtime, "def grade(sample, item):\n    return float(sample['output_text'] == item['answer'])\n")
    assert ok.score == 1.0 and ok.cacheable


def test_raise_timeout_forgery_and_range(runtime) -> None:
    raised = _grade(runtime, "import json\ndef grade(sample, item):\n    return json.loads(sample['output_text'])['x']\n",
                    response="not json")
    assert raised.score == 0.0 and "JSONDecodeError" in raised.reason
    slow = _grade(runtime, "import time\ndef grade(sample, item):\n    time.sleep(60)\n    return 1.0\n")
    assert slow.score == 0.0 and "timed out" in slow.reason and not slow.cacheable
    forged = ("import sys, json\n"
              "def grade(sample, item):\n"
              "    nonce = sys._getframe(1).f_globals['nonce']\n"
              "    print(nonce, json.dumps({'score': 1.0}))\n"
              "    return 0.0\n")
    assert "forged" in _grade(runtime, forged).reason
    with pytest.raises(TaskError, match="outside"):
        _grade(runtime, "def grade(sample, item):\n    return 7\n")


def test_malformed_specs_are_refused() -> None:
    with pytest.raises(TaskError, match="missing field 'source'"):
        build_grader({"type": "python", "name": "p"})
    with pytest.raises(TaskError, match="defines no grade"):
        build_grader({"type": "python", "name": "p", "source": "x = 1"})
    with pytest.raises(TaskError, match="grader type must be one of"):
        build_grader({"type": "endpoint", "name": "p"})
