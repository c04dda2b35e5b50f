"""`flywheel ingest` options: --format, --max-quarantine-rate (exit 1 over it) and the numeric checks (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flywheel.cli import main

FIXTURES = Path(__file__).parent / "fixtures"


def test_max_quarantine_rate_fails_the_run_after_loading(tmp_path, capsys):
    w = str(tmp_path / "w.duckdb")
    src = str(FIXTURES / "openai_chat.jsonl")  # 4 of its 7 records are bad: 57%
    assert main(["ingest", src, "--warehouse", w, "--max-quarantine-rate", "0.5", "--json"]) == 1
    cap = capsys.readouterr()
    out = json.loads(cap.out)
    assert (out["ingested"], out["quarantined"], out["quarantine_rate_exceeded"]) == (3, 4, True)
    assert cap.err.count("\n") == 1
    assert "4 of 7 records quarantined (57.1%), over --max-quarantine-rate 50.0%" in cap.err
    assert main(["ingest", src, "--warehouse", w, "--max-quarantine-rate", "0.6"]) == 0  # at or under: success
    assert main(["ingest", src, "--warehouse", w]) == 0  # default 1.0: never fails


def test_format_flag_is_passed_to_ingest(tmp_path, capsys):
    w = str(tmp_path / "w.duckdb")
    # a forced format that fits no record of the file: loaded and quarantined, then exit 1 naming the file
    assert main(["ingest", str(FIXTURES / "openai_chat.jsonl"), "--warehouse", w, "--format", "sharegpt", "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert (out["ingested"], out["quarantined"], out["by_reason"]) == (0, 7, {"missing_field": 7})
    assert out["files_fitting_no_record"] == [str(FIXTURES / "openai_chat.jsonl")]


@pytest.mark.parametrize("flag, value, why", [
    ("--max-field-mib", "-1", "expected a size in MiB above 0"),
    ("--max-field-mib", "0", "expected a size in MiB above 0"),
    ("--max-field-mib", "nan", "expected a finite number"),
    ("--max-field-mib", "big", "expected a number"),
    ("--max-quarantine-rate", "1.5", "expected a fraction in [0, 1]"),
    ("--max-quarantine-rate", "-0.1", "expected a fraction in [0, 1]"),
    ("--format", "csv", "invalid choice: 'csv'"),
])
def test_numeric_and_choice_options_are_validated(flag, value, why, tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        main(["ingest", str(FIXTURES / "sharegpt.json"), "--warehouse", str(tmp_path / "w.duckdb"), flag, value])
    assert e.value.code == 2
    assert why in capsys.readouterr().err
    assert not (tmp_path / "w.duckdb").exists()
