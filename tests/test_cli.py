"""The `flywheel` command line: with no command it lists the commands."""

from __future__ import annotations


def test_cli_help_lists_commands(capsys):
    from flywheel.cli import main

    assert main([]) == 2
    assert "COMMAND" in capsys.readouterr().out
