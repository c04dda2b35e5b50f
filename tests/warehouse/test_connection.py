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


def test_session_settings_apply_in_the_block_and_are_restored_after_an_error(tmp_path):
    import duckdb

    from flywheel.warehouse.session import configure, session_settings

    con = configure(duckdb.connect())
    read = "SELECT current_setting('preserve_insertion_order'), current_setting('TimeZone')"
    try:
        with session_settings(con, preserve_insertion_order="true", TimeZone="'Asia/Tokyo'"):
            assert con.execute(read).fetchall() == [(True, "Asia/Tokyo")]
            raise RuntimeError("the block fails")
    except RuntimeError:
        pass
    assert con.execute(read).fetchall() == [(False, "UTC")]


def test_session_settings_never_hide_the_blocks_error_behind_a_failed_restore():
    import duckdb
    import pytest

    from flywheel.warehouse.session import session_settings

    con = duckdb.connect()
    with pytest.raises(RuntimeError, match="the block's own error"):
        with session_settings(con, preserve_insertion_order="true"):
            con.close()  # the connection breaks: restoring the setting fails too
            raise RuntimeError("the block's own error")
