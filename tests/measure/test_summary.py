"""summarize_steps: median, spread, outliers, and the busy-machine / wide-spread warnings (synthetic timings, mocked
load average)."""
from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest

import perfmodel.measure as M


def test_quiet_run_has_no_warning():
    s = M.summarize_steps([1.0] * 19 + [3.0], load_1min=0.5, cores=2)
    assert (s.n_steps, s.median_s, s.iqr_s, s.n_outliers, s.warnings) == (20, 1.0, 0.0, 1, ())
    assert str(s) == "median 1 s per step over 20 timed steps; spread: IQR 0.0 % of the median, MAD 0.0 %; 1 outlier"


def test_busy_machine_warns_with_a_mocked_load(monkeypatch):
    """Uniformly slow steps (2.8-11.3 s against 0.89 s quiet) flag no outlier: the load average is what tells."""
    monkeypatch.setattr(os, "getloadavg", lambda: (5.5, 3.0, 1.0))
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    s = M.summarize_steps(np.linspace(2.8, 3.2, 20))
    assert s.load_1min == 5.5 and s.cores == 2 and s.n_outliers == 0
    assert len(s.warnings) == 1 and s.warnings[0].startswith(
        "the machine is busy: 1-minute load average 5.50 on 2 logical cores (expected at most 2)")
    monkeypatch.setattr(os, "getloadavg", lambda: (2.0, 3.0, 1.0))  # load equal to the cores: one full run, not busy
    assert M.summarize_steps(np.linspace(2.8, 3.2, 20)).warnings == ()


def test_wide_spread_warns():
    t = [2.8, 3.5, 5.0, 6.0, 8.0, 9.5, 11.3, 4.0]
    s = M.summarize_steps(t, load_1min=0.0, cores=2)
    q1, q3 = np.percentile(t, [25, 75])
    assert s.iqr_s == pytest.approx(q3 - q1) and s.iqr_pct == pytest.approx(100 * (q3 - q1) / np.median(t))
    assert len(s.warnings) == 1 and "the step times spread widely: IQR" in s.warnings[0] and "(expected at most 25 %)" in s.warnings[0]
    # the threshold: IQR of exactly 25 % of the median is accepted, just above it warns
    assert M.summarize_steps([0.875, 0.875, 1.0, 1.125, 1.125], load_1min=0, cores=1).warnings == ()
    assert len(M.summarize_steps([0.87, 0.87, 1.0, 1.13, 1.13], load_1min=0, cores=1).warnings) == 1
    assert M.summarize_steps([0.87, 0.87, 1.0, 1.13, 1.13], load_1min=0, cores=1, spread_limit=0.5).warnings == ()


def test_rows_of_measure_step_time_leave_warmup_out():
    d = pd.DataFrame({"warmup": [True, True, False, False, False], "step_time_s": [9.0, 8.0, 1.0, 1.0, 1.2],
                      "outlier": [False, False, False, False, True]})
    s = M.summarize_steps(d, load_1min=None, cores=4)
    assert (s.n_steps, s.median_s, s.n_outliers) == (3, 1.0, 1)


def test_no_load_average_on_this_os(monkeypatch):
    monkeypatch.delattr(os, "getloadavg")
    s = M.summarize_steps([1.0, 1.0], cores=1)
    assert s.load_1min is None and s.warnings == ()


def test_errors():
    with pytest.raises(ValueError, match=r"needs at least one timed step with a positive, finite time; got 0 timed steps"):
        M.summarize_steps([])
    with pytest.raises(ValueError, match=r"got 2 timed steps \[1.0, -1.0\]"):
        M.summarize_steps([1.0, -1.0])
    with pytest.raises(ValueError, match=r"spread_limit must be a positive fraction"):
        M.summarize_steps([1.0], spread_limit=0)
