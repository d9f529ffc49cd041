"""CM-DARE's step-time regressions on perfmodel's own CPU measurements, leave-one-model-out.

The figure refits on the measurements, so it takes no ``data`` frame (``perfmodel.figures.cpu_lomo(steps=...)`` takes other
measurements).
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers._item import Item
from perfmodel.papers.beyond import _cpu_measurements as _impl

ITEM = Item(
    paper="perfmodel",
    number="beyond CM-DARE prediction models",
    title="CM-DARE's step-time regressions on perfmodel's own CPU measurements, leave-one-model-out",
    upstream="-",
    sources=("datasets/measurements (perfmodel's own CPU step times)",),
    procedure=("Leave-one-model-out evaluation of CM-DARE's step-time regressors on perfmodel's CPU measurements, "
               "per feature set."),
    status="perfmodel analysis",
    legacy_id="cpu_lomo",
    notebook="notebooks/10-cpu-measurements.ipynb",
    test="tests/papers/test_cpu_measurements.py",
)

__all__ = ["ITEM", "data", "numbers", "figure"]


def data() -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.cpu_lomo_data``)."""
    return _impl.cpu_lomo_data()


def numbers() -> pd.DataFrame:
    """perfmodel's own results: the leave-one-model-out MAPE per batch size, threads, feature set and fit
    (``COMPARISON_COLUMNS``, no paper value, status ``PERFMODEL-RESULT``, the protocol in ``reason``), from :func:`data`."""
    rows = []
    for r in data().itertuples(index=False):
        threads = f"{r.threads} thread{'s' if r.threads > 1 else ''}"
        rows.append(dict(quantity=f"lomo_mape_pct (batch {r.batch_size}, {threads}, {r.features}, {r.fit})", unit="pct", value=r.mape_pct,
                         protocol=f"leave-one-model-out over the {r.n_models} zoo CNNs timed on perfmodel's CPU at batch {r.batch_size}, "
                                  f"{threads}: each CNN predicted by a {r.fit} StepTimeRegressor fitted on the others, features "
                                  f"{', '.join(_impl.CPU_FEATURE_SETS[r.features])}; MAPE from perfmodel.diagnostics.metrics"))
    return _item.item_results(__name__, rows)


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (drawn from a fit: ``data`` must be None; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    _item.check_no_data(__name__, data)
    return _impl.cpu_lomo(ax=ax)
