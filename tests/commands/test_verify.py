"""`flywheel verify`: one verdict per input line in order, malformed lines named, `--out`/`--json`/`--cache`."""

from __future__ import annotations

import json

import duckdb

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
    assert main(["verify", str(f)]) == 0
    out = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
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
    assert main(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary == {"lines": 9, "passed": 4, "failed": 4, "errors": 1, "out": str(out)}
    first = out.read_text()
    assert len(first.splitlines()) == 9
    con = duckdb.connect(str(cache))
    assert con.execute("SELECT count(*) FROM verdict_cache").fetchone()[0] == 8
    con.close()
    assert main(argv) == 0 and out.read_text() == first  # re-scoring is a lookup with the same answer


def test_cli_missing_file(capsys):
    assert main(["verify", "/nonexistent/x.jsonl"]) == 2
    assert "cannot read" in capsys.readouterr().err
