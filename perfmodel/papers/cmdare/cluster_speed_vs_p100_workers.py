"""Steps/s vs #P100 workers with 2 PS; the 96 cluster means and scaling observations.

The exact row selection behind the authors' inline means is not recoverable (an exhaustive search over contiguous windows finds
no single rule). Approximation rule: the mean of ``Value`` over rows with ``Step >= 2000`` reproduces the inline means within 1 % for 92 of
96 configurations (median absolute error 0.17 %; worst P100 Shake-Shake big 7 workers -15.3 %). K80 scaling is near linear (8-worker
efficiency 0.96, 1.00, 0.98, 0.92); P100 with 1 PS plateaus after 4-5 workers; a second PS raises 8-worker ResNet-15 speed from 103.69 to
176.67 steps/s (1.70x).

Paper: CM-DARE, not numbered in the upstream sources. Upstream: cluster_size_training_speed.pdf (redraws cell 4).

Sources
-------
* redraws cell 1 inline mean and std arrays (transcribed)
* cake-lab/CM-DARE: data/processed_data/speed_and_cluster_size/{k80,p100,p100ps2}/<cfg>worker<N>/run_.-tag-global_step_sec.csv

Procedure
---------
Plot the four *p100ps2 arrays (3.3x1.5 in). The 96 cluster means are recomputed from the raw files as the mean of Value over rows
with Step >= 2000; the scaling observations (8-worker efficiency, linear-scaling MAPE, 2-PS gains) come from the inline arrays.
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers.cmdare import _cluster_size as _impl

#: paper the item belongs to ("perfmodel": beyond the papers)
PAPER = "CM-DARE"
#: figure/table number as the paper prints it
NUMBER = "not numbered in the upstream sources"
#: title
TITLE = "Steps/s vs #P100 workers with 2 PS; the 96 cluster means and scaling observations"
#: the upstream file / notebook cell it redraws
UPSTREAM = "cluster_size_training_speed.pdf (redraws cell 4)"
#: upstream data files
SOURCES = (
    "redraws cell 1 inline mean and std arrays (transcribed)",
    "cake-lab/CM-DARE: data/processed_data/speed_and_cluster_size/{k80,p100,p100ps2}/<cfg>worker<N>/run_.-tag-global_step_sec.csv",
)
#: procedure
PROCEDURE = "Plot the four *p100ps2 arrays (3.3x1.5 in). The 96 cluster means are recomputed from the raw files as the mean of Value over rows with Step >= 2000; the scaling observations (8-worker efficiency, linear-scaling MAPE, 2-PS gains) come from the inline arrays."
#: tolerance rule of its numbers
TOLERANCE = "EXACT numbers within 1e-6 relative (or the printed rounding as atol); APPROX numbers within the rule of their row in datasets/reference/paper_numbers"
#: reproduction status of the data behind it
STATUS = "INLINE / APPROX-DATA"
#: non-empty: why the item cannot be reproduced at all
UNAVAILABLE = ""
#: non-empty: why figure() draws nothing
NO_FIGURE = ""
#: non-empty: why numbers() is empty
NO_NUMBERS = ""
#: datasets/reference/paper_numbers area its numbers() compares (the whole area)
NUMBERS_AREA = "cluster"
#: item whose numbers() computes this item's numbers
NUMBERS_FROM = ""
#: the id before the papers were packages (still accepted by --only)
LEGACY_ID = "cluster_size_training_speed"
#: keyword arguments of each figure the runner draws
VARIANTS = ({},)
#: notebook showing it
NOTEBOOK = "notebooks/03-cluster-speed.ipynb"
#: test checking it
TEST = "tests/papers/test_cluster_figures.py"
#: the authors' own image of the figure (a registry key of kind "image"; the report shows it beside ours), "" when none
AUTHORS_IMAGE = ""

__all__ = ["data", "numbers", "figure"]


def data() -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.cluster_size_training_speed_data``)."""
    return _impl.cluster_size_training_speed_data()


def numbers() -> pd.DataFrame:
    """Paper value next to reproduced value (``COMPARISON_COLUMNS``) for the whole ``cluster`` area (rows of other items name them in ``item``)."""
    return _impl.cluster_speed_numbers_data()


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return _impl.cluster_size_training_speed(data=data, ax=ax)
