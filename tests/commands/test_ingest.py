"""`flywheel ingest`: JSON and text reports, re-ingest counts duplicates, a missing path is a clear error."""

from __future__ import annotations

import json


def test_cli_json_and_missing_path(rec, write_jsonl, tmp_path, capsys):
    from flywheel.cli import main

    write_jsonl(tmp_path / "a.jsonl", [rec(1), rec(1), "{bad"])
    w = tmp_path / "w.duckdb"
    assert main(["ingest", str(tmp_path / "a.jsonl"), "--warehouse", str(w), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {k: out[k] for k in ("lines_read", "ingested", "quarantined", "duplicates", "redactions")} == {
        "lines_read": 3, "ingested": 1, "quarantined": 1, "duplicates": 1, "redactions": 0}
    assert main(["ingest", str(tmp_path / "a.jsonl"), "--warehouse", str(w)]) == 0
    assert "duplicates  2" in capsys.readouterr().out
    assert main(["ingest", str(tmp_path / "missing"), "--warehouse", str(w)]) == 2
    assert "no such file or folder" in capsys.readouterr().err


def _sharegpt(rec, i: int) -> dict:
    r = rec(i, messages=...)
    r["conversations"] = [{"from": "human", "value": f"What is {i}+1?"}, {"from": "gpt", "value": str(i + 1)}]
    return r


def test_a_forced_format_that_fits_nothing_fails_naming_the_file(rec, write_jsonl, tmp_path, capsys):
    """issue 27: `--format openai` on a ShareGPT file quarantined 20 of 20 and exited 0."""
    from flywheel.cli import main

    write_jsonl(tmp_path / "sharegpt.jsonl", [_sharegpt(rec, i) for i in range(20)])
    w = str(tmp_path / "w.duckdb")
    assert main(["ingest", str(tmp_path / "sharegpt.jsonl"), "--warehouse", w, "--format", "openai"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "sharegpt.jsonl: no record fits --format openai: all 20 quarantined" in err
    assert "'messages'" in err and "--format auto" in err
    assert main(["ingest", str(tmp_path / "sharegpt.jsonl"), "--warehouse", w, "--json"]) == 0  # auto reads it
    out = json.loads(capsys.readouterr().out)
    assert out["ingested"] == 20 and out["files_fitting_no_record"] == []


def test_show_quarantine_prints_file_line_field_and_why(rec, write_jsonl, tmp_path, capsys, monkeypatch):
    from flywheel.cli import main

    monkeypatch.chdir(tmp_path)
    write_jsonl(tmp_path / "a.jsonl", [rec(1), rec(2, task_id=...), "{bad", rec(4, domain=7)])
    w = str(tmp_path / "w.duckdb")
    assert main(["ingest", "--show-quarantine", "--warehouse", w]) == 2  # no warehouse yet
    assert "no warehouse" in capsys.readouterr().err
    assert main(["ingest", "a.jsonl", "--warehouse", w]) == 0
    text = capsys.readouterr().out
    assert "SELECT" not in text and "flywheel ingest --show-quarantine" in text
    assert main(["ingest", "--show-quarantine", "2", "--warehouse", w]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "quarantined lines: 2 of 3 shown (newest run first)"
    assert lines[1] == "  a.jsonl:2  task_id  missing required field 'task_id'"
    assert lines[2].startswith("  a.jsonl:3  -  invalid JSON")
    assert main(["ingest", "--show-quarantine", "--warehouse", w, "--log-date", "2026-12-01", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["quarantine_total"] == 2 and [r["line"] for r in out["quarantine"]] == [2, 4]  # "{bad" has no day
    assert out["quarantine"][1]["field"] == "domain" and out["quarantine"][1]["kind"]
    assert main(["ingest", "--show-quarantine", "--warehouse", w, "--log-date", "2026-12-02"]) == 0
    assert capsys.readouterr().out.strip() == "no quarantined lines of 2026-12-02"
    assert main(["ingest", "a.jsonl", "--warehouse", w, "--show-quarantine", "1"]) == 0  # after a run: its files
    assert "quarantined lines: 1 of 3 shown" in capsys.readouterr().out
    assert main(["ingest", "--warehouse", w]) == 2
    assert "--show-quarantine" in capsys.readouterr().err


def test_max_quarantine_rate_judges_each_file(rec, write_jsonl, tmp_path, capsys):
    """A file half broken fails --max-quarantine-rate though the other files dilute the run's rate under it."""
    from flywheel.cli import main

    (tmp_path / "logs").mkdir()
    write_jsonl(tmp_path / "logs" / "good.jsonl", [rec(i) for i in range(190)])
    write_jsonl(tmp_path / "logs" / "broken.jsonl", [rec(1000 + i) for i in range(5)] + ["{bad"] * 5)
    w = str(tmp_path / "w.duckdb")
    assert main(["ingest", str(tmp_path / "logs"), "--warehouse", w, "--max-quarantine-rate", "0.1", "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["quarantine_rate"] == 5 / 200 and out["quarantine_rate_exceeded"]
    assert [f["file"].rsplit("/", 1)[-1] for f in out["files_over_rate"]] == ["broken.jsonl"]
    assert main(["ingest", str(tmp_path / "logs"), "--warehouse", w, "--max-quarantine-rate", "0.1"]) == 1
    assert "broken.jsonl: 5 of 10 lines quarantined (50.0%), over --max-quarantine-rate 10.0%" in capsys.readouterr().err
    assert main(["ingest", str(tmp_path / "logs"), "--warehouse", w, "--max-quarantine-rate", "0.5"]) == 0
