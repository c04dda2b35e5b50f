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
