"""CM-DARE's step-time regressions on perfmodel's own CPU measurements, leave-one-model-out.

The figure refits on the measurements, so it takes no ``data`` frame (``perfmodel.figures.cpu_lomo(steps=...)`` takes other
measurements).

Paper: perfmodel, beyond CM-DARE prediction models. Upstream: -.

Sources
-------
* datasets/measurements (perfmodel's own CPU step times)

Procedure
---------
Leave-one-model-out evaluation of CM-DARE's step-time regressors on perfmodel's CPU measurements, per feature set.
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers.beyond import _cpu_measurements as _impl

#: paper the item belongs to ("perfmodel": beyond the papers)
PAPER = "perfmodel"
#: figure/table number as the paper prints it
NUMBER = "beyond CM-DARE prediction models"
#: title
TITLE = "CM-DARE's step-time regressions on perfmodel's own CPU measurements, leave-one-model-out"
#: the upstream file / notebook cell it redraws
UPSTREAM = "-"
#: upstream data files
SOURCES = ("datasets/measurements (perfmodel's own CPU step times)",)
#: procedure
PROCEDURE = "Leave-one-model-out evaluation of CM-DARE's step-time regressors on perfmodel's CPU measurements, per feature set."
#: tolerance rule of its numbers
TOLERANCE = "none: perfmodel's own results, no paper value to hold them against (deterministic: a rerun gives the same values)"
#: reproduction status of the data behind it
STATUS = "perfmodel analysis"
#: non-empty: why the item cannot be reproduced at all
UNAVAILABLE = ""
#: non-empty: why figure() draws nothing
NO_FIGURE = ""
#: non-empty: why numbers() is empty
NO_NUMBERS = ""
#: datasets/reference/paper_numbers area its numbers() compares (the whole area)
NUMBERS_AREA = ""
#: item whose numbers() computes this item's numbers
NUMBERS_FROM = ""
#: the id before the papers were packages (still accepted by --only)
LEGACY_ID = "cpu_lomo"
#: keyword arguments of each figure the runner draws
VARIANTS = ({},)
#: notebook showing it
NOTEBOOK = "notebooks/10-cpu-measurements.ipynb"
#: test checking it
TEST = "tests/papers/test_cpu_measurements.py"
#: the authors' own image of the figure (a registry key of kind "image"; the report shows it beside ours), "" when none
AUTHORS_IMAGE = ""

__all__ = ["data", "numbers", "figure"]


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
    return _item.own_results(LEGACY_ID, rows, citation="perfmodel's own result on " + " and ".join(SOURCES))


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (drawn from a fit: ``data`` must be None; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    _item.check_no_data(__name__, data)
    return _impl.cpu_lomo(ax=ax)
