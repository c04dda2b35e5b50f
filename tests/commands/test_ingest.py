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
