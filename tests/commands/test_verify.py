"""`flywheel verify`: one verdict per input line in order, malformed lines named (exit 1), readable lines
without --json, `--out`/`--json`/`--cache`."""

from __future__ import annotations

import json

import duckdb
import pytest

from flywheel.cli import main
from flywheel.tasks.suites import train_suite


def _lines():
    out = []
    for d in ("math", "agent"):
        for t in train_suite(d, 2):
            out.append({"domain": d, "task": t.verifier_task(), "response": t.solution})
            out.append({"domain": d, "task": t.verifier_task(), "response": "I give up"})
    return out


def test_verify_file_order_and_malformed_lines(tmp_path, capsys):
    good = _lines()
    raw = [json.dumps(x) for x in good]
    raw.insert(1, "{broken json")
    raw.insert(3, json.dumps({"domain": "math", "task": {"prompt": "no answer"}, "response": "1"}))
    raw.insert(5, json.dumps(["not", "an", "object"]))
    raw.insert(6, json.dumps({"domain": "chess", "task": {}, "response": "e4"}))
    raw.insert(7, "")
    f = tmp_path / "in.jsonl"
    f.write_text("\n".join(raw) + "\n")
    assert main(["verify", str(f), "--json"]) == 1  # judged, but some input lines are broken
    cap = capsys.readouterr()
    out = [json.loads(x) for x in cap.out.splitlines()]  # the verdict lines alone: no error object added
    assert f"{f}: 5 of 13 input line(s) could not be judged: line 2: not valid JSON" in cap.err
    assert len(out) == len(raw)
    assert out[1]["reason"].startswith("line 2: not valid JSON") and out[1]["details"]["error"] == "input"
    assert out[3]["reason"].startswith("line 4: task error") and out[3]["details"]["line"] == 4
    assert out[5]["reason"] == "line 6: expected a JSON object, got list"
    assert "unknown domain" in out[6]["reason"] and out[7]["reason"] == "line 8: empty line"
    judged = [o for o in out if "error" not in o["details"]]
    assert [o["passed"] for o in judged] == [True, False] * 4  # same order as the input
    assert all(set(o) == {"reward", "passed", "reason", "details"} for o in out)


def test_verify_out_json_and_cache(tmp_path, capsys):
    f = tmp_path / "in.jsonl"
    f.write_text("".join(json.dumps(x) + "\n" for x in _lines()) + "nope\n")
    out, cache = tmp_path / "out.jsonl", tmp_path / "cache.duckdb"
    argv = ["verify", str(f), "--out", str(out), "--json", "--concurrency", "2", "--cache", str(cache)]
    assert main(argv) == 1  # the "nope" line
    summary = json.loads(capsys.readouterr().out)
    assert summary == {"lines": 9, "passed": 4, "failed": 4, "errors": 1, "out": str(out)}
    first = out.read_text()
    assert len(first.splitlines()) == 9
    con = duckdb.connect(str(cache))
    assert con.execute("SELECT count(*) FROM verdict_cache").fetchone()[0] == 8
    con.close()
    assert main(argv) == 1 and out.read_text() == first  # re-scoring is a lookup with the same answer


def test_cli_missing_file(capsys):
    assert main(["verify", "/nonexistent/x.jsonl"]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_verify_readable_lines_and_exit_codes(tmp_path, capsys):
    good = _lines()[:2]  # a right and a wrong answer
    f = tmp_path / "in.jsonl"
    f.write_text("".join(json.dumps(x) + "\n" for x in good))
    assert main(["verify", str(f)]) == 0  # a wrong answer is a verdict, not an error
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"{f}:1: passed (reward 1.00)") and lines[1].startswith(f"{f}:2: failed (reward 0.00)")
    assert lines[-1] == "2 lines: 1 passed, 1 failed, 0 errors"
    assert not any(ln.startswith("{") for ln in lines)  # no JSON without --json

    f.write_text(json.dumps(good[0]) + "\n{broken\n")
    assert main(["verify", str(f)]) == 1
    cap = capsys.readouterr()
    assert f"{f}:2: error (reward 0.00): not valid JSON" in cap.out
    assert cap.err.strip() == (f"flywheel: error: {f}: 1 of 2 input line(s) could not be judged: "
                               "line 2: not valid JSON (Expecting property name enclosed in double quotes at column 2)")


def test_verify_json_errors_and_bad_concurrency(tmp_path, capsys):
    assert main(["verify", str(tmp_path / "missing.jsonl"), "--json"]) == 2
    err = json.loads(capsys.readouterr().out)
    assert err["exit_code"] == 2 and err["error"].startswith(f"cannot read {tmp_path / 'missing.jsonl'}")
    with pytest.raises(SystemExit) as e:
        main(["verify", str(tmp_path / "x.jsonl"), "--concurrency", "0"])
    assert e.value.code == 2 and "argument --concurrency: expected an integer >= 1, got '0'" in capsys.readouterr().err


def test_non_utf8_input_is_one_line_and_exit_2(tmp_path, capsys, monkeypatch):
    f = tmp_path / "in.jsonl"
    f.write_bytes(b'{"domain": "math", "task": {}, "response": "\xff"}\n')
    assert main(["verify", str(f)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not UTF-8 text (byte 44" in err and "Traceback" not in err
    monkeypatch.setattr("sys.stdin", type("In", (), {"buffer": open(f, "rb")})())  # noqa: SIM115
    assert main(["verify", "-", "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["error"].startswith("<stdin>: not UTF-8 text")


def test_unusable_cache_file_is_one_line_and_exit_2(tmp_path, capsys):
    f = tmp_path / "in.jsonl"
    f.write_text(json.dumps(_lines()[0]) + "\n")
    (tmp_path / "not_a_db").write_text("garbage")
    for cache in (tmp_path / "in.jsonl" / "c.duckdb", tmp_path / "not_a_db"):
        assert main(["verify", str(f), "--cache", str(cache)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("flywheel: error: cannot open the verdict cache") and err.count("\n") == 1, err


def test_line_separators_inside_a_json_string_do_not_split_the_line(tmp_path, capsys):
    line = _lines()[0]
    line["response"] = line["response"] + "\u2028\u2029\x85\x0c trailing"
    f = tmp_path / "in.jsonl"
    f.write_text(json.dumps(line, ensure_ascii=False) + "\r\n", encoding="utf-8")
    assert main(["verify", str(f), "--json"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 and json.loads(out[0])["details"].get("error") is None
