"""`flywheel serve` checks for vLLM before anything starts: a missing install is exit 2 with the command."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from flywheel.cli import main


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vLLM is installed in this interpreter")
def test_serve_without_vllm_is_a_usage_error_with_the_install_command(flywheel_home, capsys):
    code = main(["serve"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"vLLM is not installed for {sys.executable}" in err and "make setup-vllm" in err
    assert len(err.strip().splitlines()) == 1
    assert not (flywheel_home.home / "serving").exists() or not any((flywheel_home.home / "serving").iterdir())


def test_serve_names_an_interpreter_that_cannot_run(flywheel_home, tmp_path, capsys):
    code = main(["serve", "--python", str(tmp_path / "no-such-python"), "--json"])
    out = capsys.readouterr().out
    assert code == 2 and "cannot run" in out and "no-such-python" in out
