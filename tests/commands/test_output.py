"""Under --json, stdout carries the command's JSON alone, whatever a library prints meanwhile."""

from __future__ import annotations

import argparse
import json
import logging
import sys

from flywheel.commands.output import emit, reserved_stdout


def test_library_chatter_goes_to_stderr_and_the_json_stays_clean(capsys):
    chatty = logging.getLogger("flywheel-test-chatty")
    handler = logging.StreamHandler(sys.stdout)  # what DeepSpeed's logger does at import time
    chatty.addHandler(handler)
    try:
        with reserved_stdout():
            print("Setting accelerator to CPU.")
            chatty.warning("a library warning")
            emit(argparse.Namespace(json=True), {"ok": 1}, "text")
        chatty.warning("after")
    finally:
        chatty.removeHandler(handler)
    cap = capsys.readouterr()
    assert cap.out.splitlines()[0] == '{"ok": 1}' and json.loads(cap.out.splitlines()[0]) == {"ok": 1}
    assert "Setting accelerator" in cap.err and "a library warning" in cap.err
    assert "after" in cap.out  # handlers are given their stream back


def test_fail_under_json_is_one_object_and_never_a_second(capsys):
    from flywheel.commands.output import EXIT_FAILED, EXIT_INFRA, fail, json_errors

    with json_errors(True):
        assert fail("bad\n  input", EXIT_INFRA) == 3
    assert json.loads(capsys.readouterr().out) == {"error": "bad input", "exit_code": 3}
    with json_errors(True):  # the result was emitted already: the error goes to stderr, stdout keeps one object
        emit(argparse.Namespace(json=True), {"loaded": 5}, "text")
        assert fail("over the limit", EXIT_FAILED) == 1
    cap = capsys.readouterr()
    assert json.loads(cap.out) == {"loaded": 5} and cap.err == "flywheel: error: over the limit\n"
    assert fail("plain") == 2 and capsys.readouterr().err == "flywheel: error: plain\n"


def test_a_file_the_user_named_that_cannot_be_used_is_exit_2_without_a_traceback(tmp_path, capsys):
    """An unwritable warehouse (its folder is a file; a file that is not a DuckDB database): one line, exit 2."""
    from flywheel.cli import main

    logs = tmp_path / "logs.jsonl"
    logs.write_text("")
    (tmp_path / "not_a_db.duckdb").write_text("garbage")
    for wh in (logs / "w.duckdb", tmp_path / "not_a_db.duckdb"):
        assert main(["ingest", str(logs), "--warehouse", str(wh)]) == 2
        err = capsys.readouterr().err
        assert "Traceback" not in err and err.count("\n") == 1 and err.startswith("flywheel: error: ingest failed"), err
