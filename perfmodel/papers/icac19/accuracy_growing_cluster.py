"""Accuracy vs steps: static 1-K80 cluster vs a growing cluster with naive and adaptive LR.

Paper: dynamic run 2.28 h vs 3.85 h static (40.8 % faster), cost $2.44 vs $3.11, accuracy 93.01 / 91.84 / 92.83. Data: baseline
3.8541 h, final 93.01 %; case1 2.3963 h, final 91.75 % (91.84 at steps 56014/60018); case2 2.3956 h, final 92.85 %. The 2.28 h and the
costs are not reproducible from the data.

Paper: ICAC'19, Fig. 5. Upstream: adaptive_lr.pdf.

Sources
-------
* cake-lab/transient-deep-learning: data/adaptive_lr/lr_baseline.csv
* cake-lab/transient-deep-learning: data/adaptive_lr/lr_case1.csv
* cake-lab/transient-deep-learning: data/adaptive_lr/lr_case2.csv

Procedure
---------
Top-1 accuracy vs step of the 1 K80 + 1 PS baseline and of the dynamic cluster (one K80 added every 16k steps) with naive and
adaptive learning rate.
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers import _transient as _impl

#: paper the item belongs to ("perfmodel": beyond the papers)
PAPER = "ICAC'19"
#: figure/table number as the paper prints it
NUMBER = "Fig. 5"
#: title
TITLE = "Accuracy vs steps: static 1-K80 cluster vs a growing cluster with naive and adaptive LR"
#: the upstream file / notebook cell it redraws
UPSTREAM = "adaptive_lr.pdf"
#: upstream data files
SOURCES = (
    "cake-lab/transient-deep-learning: data/adaptive_lr/lr_baseline.csv",
    "cake-lab/transient-deep-learning: data/adaptive_lr/lr_case1.csv",
    "cake-lab/transient-deep-learning: data/adaptive_lr/lr_case2.csv",
)
#: procedure
PROCEDURE = "Top-1 accuracy vs step of the 1 K80 + 1 PS baseline and of the dynamic cluster (one K80 added every 16k steps) with naive and adaptive learning rate."
#: tolerance rule of its numbers
TOLERANCE = "EXACT numbers within 1e-6 relative (or the printed rounding as atol); APPROX numbers within the rule of their row in datasets/reference/paper_numbers"
#: reproduction status of the data behind it
STATUS = "APPROX-DATA"
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
LEGACY_ID = "icac_fig5"
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
    """The tidy frame the figure draws (``perfmodel.figures.icac_fig5_data``)."""
    return _impl.icac_fig5_data()


def numbers() -> pd.DataFrame:
    """This item's rows of the comparison table that ``vm_startup_breakdown`` computes (``COMPARISON_COLUMNS``)."""
    return _item.numbers_from(__name__)


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return _impl.icac_fig5(data=data, ax=ax)
