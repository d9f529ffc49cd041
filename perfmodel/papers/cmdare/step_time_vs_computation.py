"""Step time vs normalized computation (model/GPU), both GPUs pooled.

``Model/GPU`` is the min-max of F/TFLOPS over both GPUs: min = 630989589/9.526 (ResNet-15 on P100 -> 0), max =
22864820174/4.113 (Shake-Shake big on K80 -> 1). The same column name means a within-file min-max of the model FLOPs in
``0latency_k80*.csv`` / ``0latency_p100*.csv``: the upstream files are not consistent; perfmodel's loaders name the two meanings apart.

Paper: CM-DARE, not numbered in the upstream sources. Upstream: speed_computation_correlation.pdf (sp2 cells 33-34; older version cell 20).

Sources
-------
* cake-lab/CM-DARE: data/processed_data/speed_data/0latency_norm_computation.csv

Procedure
---------
Scatter of Step Time (s) against Model/GPU ('Normalized computation') over 520 rows = 20 CNNs x 2 GPUs x 13 samples.
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers.cmdare import _speed_computation as _impl

#: paper the item belongs to ("perfmodel": beyond the papers)
PAPER = "CM-DARE"
#: figure/table number as the paper prints it
NUMBER = "not numbered in the upstream sources"
#: title
TITLE = "Step time vs normalized computation (model/GPU), both GPUs pooled"
#: the upstream file / notebook cell it redraws
UPSTREAM = "speed_computation_correlation.pdf (sp2 cells 33-34; older version cell 20)"
#: upstream data files
SOURCES = ("cake-lab/CM-DARE: data/processed_data/speed_data/0latency_norm_computation.csv",)
#: procedure
PROCEDURE = "Scatter of Step Time (s) against Model/GPU ('Normalized computation') over 520 rows = 20 CNNs x 2 GPUs x 13 samples."
#: tolerance rule of its numbers
TOLERANCE = "no quoted numbers"
#: reproduction status of the data behind it
STATUS = "EXACT-DATA"
#: non-empty: why the item cannot be reproduced at all
UNAVAILABLE = ""
#: non-empty: why figure() draws nothing
NO_FIGURE = ""
#: non-empty: why numbers() is empty
NO_NUMBERS = "The papers quote no number for it beyond the data checked in its test."
#: datasets/reference/paper_numbers area its numbers() compares (the whole area)
NUMBERS_AREA = ""
#: item whose numbers() computes this item's numbers
NUMBERS_FROM = ""
#: the id before the papers were packages (still accepted by --only)
LEGACY_ID = "speed_computation_correlation"
#: keyword arguments of each figure the runner draws
VARIANTS = ({},)
#: notebook showing it
NOTEBOOK = "notebooks/02-speed-prediction.ipynb"
#: test checking it
TEST = "tests/papers/test_speed_figures.py"
#: the authors' own image of the figure (a registry key of kind "image"; the report shows it beside ours), "" when none
AUTHORS_IMAGE = ""

__all__ = ["data", "numbers", "figure"]


def data() -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.speed_computation_correlation_data``)."""
    return _impl.speed_computation_correlation_data()


def numbers() -> pd.DataFrame:
    """No quoted numbers (see ``NO_NUMBERS``): an empty ``COMPARISON_COLUMNS`` frame."""
    return _item.no_numbers(__name__)


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return _impl.speed_computation_correlation(data=data, ax=ax)
