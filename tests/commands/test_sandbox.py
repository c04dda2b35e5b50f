"""`flywheel sandbox exec`: JSON result with the program's exit code; the command exits 0/1 (ran, program
passed/failed), 2 (usage) or 3 (sandbox infrastructure), so a program's own 3 never reads as an infra failure."""

from __future__ import annotations

import json


def test_cli_sandbox_exec_json(tmp_path, capsys):
    from flywheel.cli import main

    prog = tmp_path / "p.py"
    prog.write_text("import sys\nprint('hi')\nsys.exit(4)\n")
    assert main(["sandbox", "exec", str(prog), "--json", "--timeout", "5", "--memory", "256"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert {k: out[k] for k in ("exit_code", "stdout", "stderr", "timed_out", "killed_reason")} == {
        "exit_code": 4, "stdout": "hi\n", "stderr": "", "timed_out": False, "killed_reason": None}
    prog.write_text("import time\ntime.sleep(10)\n")
    assert main(["sandbox", "exec", str(prog), "--json", "--timeout", "0.5"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["timed_out"] and out["killed_reason"] == "wall_timeout" and out["exit_code"] < 0
    assert main(["sandbox", "exec", str(tmp_path / "missing.py")]) == 2
    assert main(["sandbox", "exec", str(tmp_path / "missing.py"), "--json"]) == 2
    assert json.loads(capsys.readouterr().out) == {"error": f"no such file: {tmp_path / 'missing.py'}", "exit_code": 2}


def test_program_exit_3_is_not_an_infra_failure(tmp_path, capsys):
    from flywheel.cli import main

    prog = tmp_path / "p.py"
    prog.write_text("import sys\nsys.exit(3)\n")
    assert main(["sandbox", "exec", str(prog), "--timeout", "5"]) == 1  # 3 would mean the sandbox broke
    assert "[sandbox local: exit 3," in capsys.readouterr().out
    prog.write_text("print('ok')\n")
    assert main(["sandbox", "exec", str(prog), "--timeout", "5", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["exit_code"] == 0


def test_sandbox_infrastructure_failure_exits_3(tmp_path, capsys, monkeypatch):
    from flywheel.cli import main

    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    prog = tmp_path / "p.py"
    prog.write_text("print('hi')\n")
    # a docker engine that is not there: the sandbox cannot start, whatever the program would do
    argv = ["sandbox", "exec", str(prog), "--backend", "docker", "--json"]
    code = main(argv)
    out = json.loads(capsys.readouterr().out)
    assert code == 3 and out["exit_code"] == 3 and "infrastructure" in out["error"]


def test_non_utf8_program_or_stdin_is_one_line_and_exit_2(tmp_path, capsys):
    from flywheel.cli import main

    bad, good = tmp_path / "bad.py", tmp_path / "good.py"
    bad.write_bytes(b"print('\xff')\n")
    good.write_text("print(1)\n")
    for argv in (["sandbox", "exec", str(bad)], ["sandbox", "exec", str(good), "--stdin", str(bad)]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "not UTF-8 text (byte 7" in err and err.count("\n") == 1 and "Traceback" not in err, err
