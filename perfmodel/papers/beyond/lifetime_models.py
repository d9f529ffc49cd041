"""Lifetime models (KM, exponential, Weibull, bathtub) compared by AIC per GPU.

The per-server lifetimes are reconstructed from the CDF arrays (the only lifetime data of CM-DARE). The figure is drawn from the
fits, so it takes no ``data``; ``data()`` is the AIC table.

Paper: perfmodel, perfmodel (beyond CM-DARE section on lifetimes). Upstream: -.

Sources
-------
* CM-DARE lifetime CDF arrays (per-server lifetimes reconstructed from them, censored at 24 h)

Procedure
---------
Kaplan-Meier estimate of the pooled per-GPU lifetimes with fitted exponential, Weibull and bathtub CDFs (lifelines); AIC per model
and GPU.
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers.beyond import _lifetime_models as _impl

#: paper the item belongs to ("perfmodel": beyond the papers)
PAPER = "perfmodel"
#: figure/table number as the paper prints it
NUMBER = "perfmodel (beyond CM-DARE section on lifetimes)"
#: title
TITLE = "Lifetime models (KM, exponential, Weibull, bathtub) compared by AIC per GPU"
#: the upstream file / notebook cell it redraws
UPSTREAM = "-"
#: upstream data files
SOURCES = ("CM-DARE lifetime CDF arrays (per-server lifetimes reconstructed from them, censored at 24 h)",)
#: procedure
PROCEDURE = "Kaplan-Meier estimate of the pooled per-GPU lifetimes with fitted exponential, Weibull and bathtub CDFs (lifelines); AIC per model and GPU."
#: tolerance rule of its numbers
TOLERANCE = "no quoted numbers"
#: reproduction status of the data behind it
STATUS = "perfmodel analysis"
#: non-empty: why the item cannot be reproduced at all
UNAVAILABLE = ""
#: non-empty: why figure() draws nothing
NO_FIGURE = ""
#: non-empty: why numbers() is empty
NO_NUMBERS = "perfmodel's own analysis; the paper quotes no number for it beyond the data checked in its test."
#: datasets/reference/paper_numbers area its numbers() compares (the whole area)
NUMBERS_AREA = ""
#: item whose numbers() computes this item's numbers
NUMBERS_FROM = ""
#: the id before the papers were packages (still accepted by --only)
LEGACY_ID = "lifetime_models"
#: keyword arguments of each figure the runner draws
VARIANTS = ({"gpu": "K80"}, {"gpu": "P100"}, {"gpu": "V100"})
#: notebook showing it
NOTEBOOK = "notebooks/06-lifetimes.ipynb"
#: test checking it
TEST = "tests/models/test_bathtub.py"

__all__ = ["data", "numbers", "figure"]


def data(gpu="K80") -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.lifetime_models_data``)."""
    return _impl.lifetime_models_data(gpu=gpu)


def numbers() -> pd.DataFrame:
    """No quoted numbers (see ``NO_NUMBERS``): an empty ``COMPARISON_COLUMNS`` frame."""
    return _item.no_numbers(__name__)


def figure(data: pd.DataFrame | None = None, ax=None, *, gpu="K80"):
    """The figure as a matplotlib Figure (drawn from a fit: ``data`` must be None; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    _item.check_no_data(__name__, data)
    return _impl.lifetime_models(gpu=gpu, ax=ax)
