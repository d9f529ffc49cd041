"""Step time vs normalized model GFLOPs, K80 & P100, 20 CNNs.

One sample is one TensorBoard ``global_step/sec`` value (logged every 100 steps); ``Step Time (s)`` = 1/``Speed (steps/sec)``
(max relative difference 4.5e-9). ``Normalized Model`` = (F - F_min)/(F_max - F_min) with F = ``Model FLOPs``, F_min = ResNet-15
630989589, F_max = Shake-Shake big 22864820174; the rows are shuffled with ``random_state=0`` upstream (order only).

Paper: CM-DARE, Fig. 1 (CM-DARE README numbering). Upstream: speed_complexity_correlation.pdf (sp2 cells 31-32).

Sources
-------
* cake-lab/CM-DARE: data/processed_data/speed_data/0latency_k80_new.csv
* cake-lab/CM-DARE: data/processed_data/speed_data/0latency_p100_new2.csv

Procedure
---------
Scatter of Step Time (s) against Normalized Model over 20 CNNs x 13 samples per GPU (260 rows each); K80 marker 'x', P100 '^',
alpha 0.1, 2x2 in.
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers.cmdare import _speed_complexity as _impl

#: paper the item belongs to ("perfmodel": beyond the papers)
PAPER = "CM-DARE"
#: figure/table number as the paper prints it
NUMBER = "Fig. 1 (CM-DARE README numbering)"
#: title
TITLE = "Step time vs normalized model GFLOPs, K80 & P100, 20 CNNs"
#: the upstream file / notebook cell it redraws
UPSTREAM = "speed_complexity_correlation.pdf (sp2 cells 31-32)"
#: upstream data files
SOURCES = (
    "cake-lab/CM-DARE: data/processed_data/speed_data/0latency_k80_new.csv",
    "cake-lab/CM-DARE: data/processed_data/speed_data/0latency_p100_new2.csv",
)
#: procedure
PROCEDURE = "Scatter of Step Time (s) against Normalized Model over 20 CNNs x 13 samples per GPU (260 rows each); K80 marker 'x', P100 '^', alpha 0.1, 2x2 in."
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
LEGACY_ID = "speed_complexity_correlation"
#: keyword arguments of each figure the runner draws
VARIANTS = ({},)
#: notebook showing it
NOTEBOOK = "notebooks/02-speed-prediction.ipynb"
#: test checking it
TEST = "tests/papers/test_speed_figures.py"
#: the authors' own image of the figure (a registry key of kind "image"; the report shows it beside ours), "" when none
AUTHORS_IMAGE = "CM:img/speed_complexity_correlation.png"

__all__ = ["data", "numbers", "figure"]


def data() -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.speed_complexity_correlation_data``)."""
    return _impl.speed_complexity_correlation_data()


def numbers() -> pd.DataFrame:
    """No quoted numbers (see ``NO_NUMBERS``): an empty ``COMPARISON_COLUMNS`` frame."""
    return _item.no_numbers(__name__)


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return _impl.speed_complexity_correlation(data=data, ax=ax)
