"""A scratch connection: the warehouse's session settings, in memory, with no tables."""

from __future__ import annotations

from flywheel.warehouse import scratch


def test_a_scratch_connection_has_the_session_settings_and_no_tables():
    con = scratch()
    try:
        assert con.execute("SELECT current_setting('TimeZone')").fetchone()[0] == "UTC"
        assert con.execute("SELECT count(*) FROM duckdb_tables()").fetchone()[0] == 0
    finally:
        con.close()
