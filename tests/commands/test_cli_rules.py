"""Rules every command keeps: flags spelt out, `--version`, numbers checked as they are read, one JSON
object on stdout under --json (errors too), and the exit codes of docs/cli.md."""

from __future__ import annotations

import argparse
import ast
import importlib.metadata
import json
import re
from pathlib import Path

import pytest

from flywheel.cli import build_parser, main
from flywheel.commands.output import EXIT_CODES, fail

REPO = Path(__file__).resolve().parents[2]


def _usage_error(argv: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    return capsys.readouterr().err


def _subparsers(parser):
    for action in parser._actions:
        for sub in (getattr(action, "choices", None) or {}).values() if isinstance(action, argparse._SubParsersAction) else ():
            yield sub
            yield from _subparsers(sub)


def test_every_parser_rejects_abbreviated_flags(tmp_path, capsys):
    parsers = list(_subparsers(build_parser()))
    assert len(parsers) >= 10 and all(not p.allow_abbrev for p in [build_parser(), *parsers])
    err = _usage_error(["ingest", str(tmp_path), "--warehous", str(tmp_path / "w.duckdb")], capsys)
    assert "unrecognized arguments: --warehous" in err and len(err.strip().splitlines()) == 1
    assert err.startswith("flywheel ingest: error:") and "see `flywheel ingest --help`" in err  # the command's help
    assert not (tmp_path / "w.duckdb").exists()
    assert "unrecognized arguments: --tempera" in _usage_error(["model", "sample", "--tempera", "1"], capsys)


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out.strip() == f"flywheel {importlib.metadata.version('flywheel')}"


@pytest.mark.parametrize("argv, why", [
    (["model", "sample", "--n", "-1"], "argument --n: expected an integer >= 1, got '-1'"),
    (["model", "sample", "--temperature", "-0.5"], "argument --temperature: expected a number >= 0.0"),
    (["sandbox", "exec", "p.py", "--timeout", "0"], "argument --timeout: expected a number > 0.0, got '0'"),
    (["sandbox", "exec", "p.py", "--memory", "-5"], "argument --memory: expected an integer >= 1"),
    (["sandbox", "exec", "p.py", "--cpu", "nan"], "argument --cpu: expected a finite number"),
    (["verify", "in.jsonl", "--concurrency", "0"], "argument --concurrency: expected an integer >= 1"),
    (["turn", "--turns", "0"], "argument --turns: expected an integer >= 1, got '0'"),
    (["turn", "--records", "-3"], "argument --records: expected an integer >= 0"),
    (["turn", "--train-budget", "-1"], "argument --train-budget: expected a number >= 0.0"),
    (["rollback", "--to", "abc"], "argument --to: expected an integer >= 1, got 'abc'"),
    (["train", "--replay-share", "1.5"], "argument --replay-share: expected a number >= 0 and <= 1, got '1.5'"),
    (["train", "--lr", "0"], "argument --lr: expected a number > 0, got '0'"),
    (["train", "--steps", "-1"], "argument --steps: expected an integer >= 0"),
    (["train", "--domain-weights", "math=-1"], "argument --domain-weights: math=-1.0: expected a number >= 0"),
    (["evaluate", "m", "--alpha", "1.5"], "argument --alpha: expected a number > 0 and <= 1, got '1.5'"),
    (["evaluate", "m", "--n-samples", "0"], "argument --n-samples: expected an integer >= 1"),
    (["evaluate", "m", "--tasks-per-domain", "math=-2"], "math=-2: expected a number >= 0"),
])
def test_numeric_options_are_checked_where_they_are_read(argv, why, capsys):
    assert why in _usage_error(argv, capsys)


@pytest.mark.parametrize("argv", [
    ["ingest", "x", "--warehous", "w", "--json"],  # argparse's own errors too
    ["train", "--lr", "-1", "--json"],
    ["model", "build", "--release", "qwen", "--json"],
    ["sandbox", "exec", "missing.py", "--json"],
    ["turn", "--set", "no-dot=1", "--json"],
    ["turn", "--day", "2026-13-45", "--json"],
    ["evaluate", "missing-checkpoint", "--json"],
    ["verify", "missing.jsonl", "--json"],
])
def test_json_errors_are_one_object_on_stdout(argv, tmp_path, monkeypatch, capsys, flywheel_home):
    monkeypatch.chdir(REPO)  # `turn` finds the project here
    argv = [str(tmp_path / a) if a in ("missing.py", "missing-checkpoint", "missing.jsonl") else a for a in argv]
    try:
        code = main(argv)
    except SystemExit as e:
        code = e.code
    out = capsys.readouterr().out
    assert code == 2 and len(out.splitlines()) == 1
    err = json.loads(out)
    assert set(err) == {"error", "exit_code"} and err["exit_code"] == 2 and "\n" not in err["error"]


def test_exit_code_table_matches_docs_and_fail():
    rows = dict(re.findall(r"^\| (\d) \| ([a-z]+)", (REPO / "docs" / "cli.md").read_text(), re.M))
    assert {int(k): v for k, v in rows.items()} == {c: m.split(":")[0].split()[0] for c, m in EXIT_CODES.items()}
    with pytest.raises(ValueError):
        fail("not a code", 5)
    with pytest.raises(ValueError):
        fail("0 is not a failure", 0)


def test_commands_use_the_declared_exit_codes_only():
    """No command hands `fail` a bare number: every code comes from output.py's constants."""
    bare = []
    for path in sorted((REPO / "flywheel" / "commands").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "fail":
                codes = node.args[1:] + [k.value for k in node.keywords if k.arg == "code"]
                bare += [f"{path.name}:{node.lineno}" for c in codes if isinstance(c, ast.Constant)]
    assert bare == []


def test_unreachable_mlflow_is_an_infrastructure_failure(flywheel_home, monkeypatch, capsys):
    import socket

    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert main(["rollback", "--tracking-uri", f"http://127.0.0.1:{port}", "--json"]) == 3
    err = json.loads(capsys.readouterr().out)
    assert err["exit_code"] == 3 and err["error"].startswith(f"MLflow at http://127.0.0.1:{port} failed")


def test_an_unexpected_failure_is_one_json_error_with_its_class(tmp_path, capsys):
    from flywheel.commands.output import exit_code_for
    from flywheel.sandbox import SandboxInfraError

    (tmp_path / "in.jsonl").write_text(json.dumps({"domain": "math", "task": {}, "response": "1"}) + "\n")
    # a verdict cache whose table is someone else's: an error no command expects
    import duckdb

    con = duckdb.connect(str(tmp_path / "foreign.duckdb"))
    con.execute("CREATE TABLE verdict_cache (x INTEGER)")
    con.close()
    assert main(["verify", str(tmp_path / "in.jsonl"), "--cache", str(tmp_path / "foreign.duckdb"), "--json"]) == 1
    cap = capsys.readouterr()
    err = json.loads(cap.out)
    assert err["exit_code"] == 1 and err["error"].startswith("verify failed: ")
    assert "Traceback" in cap.err  # the whole story stays on stderr
    wrapped = RuntimeError("step failed")
    wrapped.__cause__ = SandboxInfraError("no sandbox")
    assert (exit_code_for(wrapped), exit_code_for(ConnectionRefusedError()), exit_code_for(KeyError("x"))) == (3, 3, 1)
