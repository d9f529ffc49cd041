"""A summary of timed steps — median, spread, outliers — and the warnings that say when it cannot be trusted.

A step-time median is only a property of the model and the device when the machine was otherwise idle: on a busy
machine every step waits for a CPU, all of them are slow by about the same factor, and the outlier rule (relative to the
median) flags none of them. :func:`summarize_steps` therefore warns

* when the 1-minute load average exceeds the number of logical cores (:func:`os.getloadavg`, :func:`os.cpu_count`):
  more runnable threads than cores, so the measured steps shared the CPUs with other work; a run that itself uses every
  core brings the load to about the core count, not above;
* when the interquartile range (IQR) of the timed steps exceeds :data:`SPREAD_LIMIT` (25 %) of their median: the
  middle half of the steps then differ by more than a quarter of the value reported, and the median says little about
  the next run. Quiet CPU runs of the zoo CNNs have IQRs of a few per cent.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

__all__ = ["summarize_steps", "StepSummary", "SPREAD_LIMIT"]

#: IQR of the timed steps, as a fraction of their median, above which :func:`summarize_steps` warns.
SPREAD_LIMIT = 0.25


@dataclass(frozen=True)
class StepSummary:
    """What :func:`summarize_steps` returns; ``str()`` gives a one-line summary."""

    n_steps: int  #: timed (non-warm-up) steps
    median_s: float  #: median step time, s
    iqr_s: float  #: interquartile range of the step times, s
    iqr_pct: float  #: IQR as % of the median
    mad_pct: float  #: median absolute deviation as % of the median
    n_outliers: int  #: timed steps flagged by :func:`perfmodel.measure.flag_outliers`
    load_1min: float | None  #: 1-minute load average when summarised (None where the OS has none)
    cores: int | None  #: logical cores of this machine
    warnings: tuple[str, ...] = field(default=())  #: why the median may be unreliable (empty when it looks fine)

    def __str__(self) -> str:
        s = "" if self.n_outliers == 1 else "s"
        return (f"median {self.median_s:.4g} s per step over {self.n_steps} timed steps; spread: IQR {self.iqr_pct:.1f} % of the "
                f"median, MAD {self.mad_pct:.1f} %; {self.n_outliers} outlier{s}")


def summarize_steps(rows, *, load_1min: float | None = None, cores: int | None = None,
                    spread_limit: float = SPREAD_LIMIT) -> StepSummary:
    """Median, spread and outliers of the timed steps of :func:`perfmodel.measure.measure_step_time`, with warnings
    when the machine was busy or the spread makes the median unreliable (see the module's docstring for the rules).

    Parameters
    ----------
    rows : DataFrame or sequence of float
        Rows of :func:`~perfmodel.measure.measure_step_time` (``warmup`` rows are left out, the ``outlier`` column is
        counted), or plain step times in seconds (all timed; outliers flagged with the module's rule).
    load_1min : float, optional
        1-minute load average; default: read now with :func:`os.getloadavg` (none on Windows: no load check).
    cores : int, optional
        Logical cores; default :func:`os.cpu_count`.
    spread_limit : float
        IQR / median above which to warn (default :data:`SPREAD_LIMIT`).

    Returns
    -------
    StepSummary
    """
    import pandas as pd

    from perfmodel.measure.timing import flag_outliers

    if isinstance(rows, pd.DataFrame):
        timed = rows.loc[~rows["warmup"].astype(bool)]
        t = timed["step_time_s"].to_numpy(dtype=float)
        n_out = int(timed["outlier"].astype(bool).sum()) if "outlier" in timed else int(flag_outliers(t, np.zeros(t.size, bool)).sum())
    else:
        t = np.asarray(rows, dtype=float).ravel()
        n_out = int(flag_outliers(t, np.zeros(t.size, bool)).sum())
    if t.size == 0 or not np.all(np.isfinite(t)) or np.any(t <= 0):
        raise ValueError(f"summarize_steps needs at least one timed step with a positive, finite time; got {t.size} timed steps "
                         f"{t[:5].tolist()}{' ...' if t.size > 5 else ''}.")
    if not 0 < spread_limit:
        raise ValueError(f"spread_limit must be a positive fraction of the median (e.g. 0.25); got {spread_limit!r}.")
    med = float(np.median(t))
    q1, q3 = np.percentile(t, [25, 75])
    iqr = float(q3 - q1)
    mad = float(np.median(np.abs(t - med)))
    if load_1min is None and hasattr(os, "getloadavg"):
        try:
            load_1min = float(os.getloadavg()[0])
        except OSError:
            load_1min = None
    cores = int(cores) if cores is not None else os.cpu_count()
    warns = []
    if load_1min is not None and cores and load_1min > cores:
        warns.append(f"the machine is busy: 1-minute load average {load_1min:.2f} on {cores} logical cores (expected at most {cores}); "
                     "the steps shared the CPUs with other work and their times are inflated. Measure again on an idle machine.")
    if iqr > spread_limit * med:
        warns.append(f"the step times spread widely: IQR {iqr:.3g} s = {100 * iqr / med:.0f} % of the median {med:.3g} s (expected at "
                     f"most {100 * spread_limit:.0f} %), so the median is unreliable. Measure again with more steps on an idle machine.")
    return StepSummary(n_steps=int(t.size), median_s=med, iqr_s=iqr, iqr_pct=100 * iqr / med, mad_pct=100 * mad / med, n_outliers=n_out,
                       load_1min=load_1min, cores=cores, warnings=tuple(warns))
