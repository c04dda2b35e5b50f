"""Progress lines: throttled, with elapsed time and an ETA, on the `flywheel.progress` logger and the console."""

from __future__ import annotations

import io
import logging

from flywheel.progress import LOGGER, ProgressBar, phase_progress, show_progress_lines


def test_lines_carry_count_percent_elapsed_eta_and_postfix(caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    bar = ProgressBar(4, "SFT", every_s=0.0)
    bar.update(1)
    bar.set_postfix(loss="0.5", refresh=False)
    bar.update(1)
    bar.close()
    bar.close()  # once
    msgs = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert msgs[0].startswith("SFT: 1/4 steps (25%), ") and "elapsed, ETA " in msgs[0]
    assert msgs[1].startswith("SFT: 2/4 steps (50%)") and msgs[1].endswith(", loss=0.5")
    assert msgs[-1].startswith("SFT: 2/4 steps (50%)") and len(msgs) == 3  # close logs where it stopped


def test_lines_are_throttled_and_the_end_is_always_logged(caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    bar = ProgressBar(1000, "RLVR steps", every_s=3600.0)
    for _ in range(1000):
        bar.update(1)
    bar.close()
    msgs = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert len(msgs) == 1 and msgs[0].startswith("RLVR steps: 1000/1000 steps (100%)") and "ETA" not in msgs[0]


def test_phases_get_one_bar_each_and_the_console_shows_them():
    out = io.StringIO()
    show_progress_lines(io.StringIO())  # an earlier console (another command in this process) is replaced
    show_progress_lines(out)
    show_progress_lines(out)  # idempotent: one handler
    assert sum(getattr(h, "_flywheel_console", False) for h in logging.getLogger(LOGGER).handlers) == 1
    try:
        report = phase_progress("RFT candidates")
        report("sample", 3, 3)
        report("verify", 256, 512)
        report("verify", 512, 512)
    finally:
        log = logging.getLogger(LOGGER)
        log.handlers = [h for h in log.handlers if not getattr(h, "_flywheel_console", False)]
    lines = out.getvalue().splitlines()
    assert [ln.split(":")[1].strip() for ln in lines] == ["sample", "verify"]
    assert lines[0].startswith("  RFT candidates: sample: 3/3 (100%)")
    assert lines[1].startswith("  RFT candidates: verify: 512/512 (100%)")


def test_work_of_unknown_size_counts_without_a_total_or_eta(caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    bar = ProgressBar(0, "ingesting", unit=" lines", every_s=0.0)
    bar.update(500)
    bar.close()
    msgs = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert msgs[0].startswith("ingesting: 500 lines, ") and "ETA" not in msgs[0] and "%" not in msgs[0]
    assert len(msgs) == 2
