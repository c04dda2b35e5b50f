"""Alert thresholds are declared once, each with help, and checked at construction."""

from __future__ import annotations

import dataclasses

import pytest

from flywheel.monitoring.thresholds import AlertThresholds


def test_every_threshold_says_what_it_means():
    assert all(f.metadata.get("help") for f in dataclasses.fields(AlertThresholds))


@pytest.mark.parametrize("bad", [{"window": 0}, {"min_signal_share": 1.5}, {"min_entropy": -1.0},
                                 {"spike_factor": 1.0}, {"max_verifier_infra_rate": -0.1}])
def test_out_of_range_thresholds_are_refused(bad):
    with pytest.raises(ValueError, match=next(iter(bad))):
        AlertThresholds(**bad)
