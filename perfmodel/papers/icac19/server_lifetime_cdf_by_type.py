"""Lifetime CDF of preemptible PS (CPU), K80, P100, V100 servers.

Fraction revoked before 24 h: PS 0.1753 (n=348), K80 0.34375 (n=128), P100 0.2381 (n=42), V100 0.3485 (n=66); in the first hour
V100 0.2727, K80 0.078. The paper's text: about 70 % live 24 h, about 20 % are revoked in the first 2 h.

Paper: ICAC'19, Fig. 3. Upstream: lifetime_new.pdf (lifetime/plot.py).

Sources
-------
* lifetime/plot.py inline arrays cdf_3, cdf_1_2, cdf_2_2, cdf_4 (transcribed)
* cake-lab/transient-deep-learning: data/lifetime/lifetime.csv

Procedure
---------
CDF of server lifetimes over 0-24 h per server type from the inline arrays; fraction revoked before 24 h and in the first hour.
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers import _transient as _impl

#: paper the item belongs to ("perfmodel": beyond the papers)
PAPER = "ICAC'19"
#: figure/table number as the paper prints it
NUMBER = "Fig. 3"
#: title
TITLE = "Lifetime CDF of preemptible PS (CPU), K80, P100, V100 servers"
#: the upstream file / notebook cell it redraws
UPSTREAM = "lifetime_new.pdf (lifetime/plot.py)"
#: upstream data files
SOURCES = (
    "lifetime/plot.py inline arrays cdf_3, cdf_1_2, cdf_2_2, cdf_4 (transcribed)",
    "cake-lab/transient-deep-learning: data/lifetime/lifetime.csv",
)
#: procedure
PROCEDURE = "CDF of server lifetimes over 0-24 h per server type from the inline arrays; fraction revoked before 24 h and in the first hour."
#: tolerance rule of its numbers
TOLERANCE = "EXACT numbers within 1e-6 relative (or the printed rounding as atol); APPROX numbers within the rule of their row in datasets/reference/paper_numbers"
#: reproduction status of the data behind it
STATUS = "INLINE"
#: non-empty: why the item cannot be reproduced at all
UNAVAILABLE = ""
#: non-empty: why figure() draws nothing
NO_FIGURE = ""
#: non-empty: why numbers() is empty
NO_NUMBERS = ""
#: datasets/reference/paper_numbers area its numbers() compares (the whole area)
NUMBERS_AREA = ""
#: item whose numbers() computes this item's numbers
NUMBERS_FROM = "vm_startup_breakdown"
#: the id before the papers were packages (still accepted by --only)
LEGACY_ID = "icac_fig3"
#: keyword arguments of each figure the runner draws
VARIANTS = ({},)
#: notebook showing it
NOTEBOOK = "notebooks/09-restart-startup.ipynb"
#: test checking it
TEST = "tests/papers/test_transient_overheads.py"
#: the authors' own image of the figure (a registry key of kind "image"; the report shows it beside ours), "" when none
AUTHORS_IMAGE = ""

__all__ = ["data", "numbers", "figure"]


def data() -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.icac_fig3_data``)."""
    return _impl.icac_fig3_data()


def numbers() -> pd.DataFrame:
    """This item's rows of the comparison table that ``vm_startup_breakdown`` computes (``COMPARISON_COLUMNS``)."""
    return _item.numbers_from(__name__)


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return _impl.icac_fig3(data=data, ax=ax)
