"""`flywheel sandbox exec`: JSON result, the program's exit code, the wall timeout's 137, a missing file."""

from __future__ import annotations

import json


def test_cli_sandbox_exec_json(tmp_path, capsys):
    from flywheel.cli import main

    prog = tmp_path / "p.py"
    prog.write_text("import sys\nprint('hi')\nsys.exit(4)\n")
    assert main(["sandbox", "exec", str(prog), "--json", "--timeout", "5", "--memory", "256"]) == 4
    out = json.loads(capsys.readouterr().out)
    assert {k: out[k] for k in ("exit_code", "stdout", "stderr", "timed_out", "killed_reason")} == {
        "exit_code": 4, "stdout": "hi\n", "stderr": "", "timed_out": False, "killed_reason": None}
    prog.write_text("import time\ntime.sleep(10)\n")
    assert main(["sandbox", "exec", str(prog), "--json", "--timeout", "0.5"]) == 137
    out = json.loads(capsys.readouterr().out)
    assert out["timed_out"] and out["killed_reason"] == "wall_timeout"
    assert main(["sandbox", "exec", str(tmp_path / "missing.py")]) == 2
