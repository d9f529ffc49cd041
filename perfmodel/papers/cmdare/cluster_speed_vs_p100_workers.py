"""Steps/s vs #P100 workers with 2 PS; the 96 cluster means and scaling observations.

The exact row selection behind the authors' inline means is not recoverable (an exhaustive search over contiguous windows finds
no single rule). Approximation rule: the mean of ``Value`` over rows with ``Step >= 2000`` reproduces the inline means within 1 % for 92 of
96 configurations (median absolute error 0.17 %; worst P100 Shake-Shake big 7 workers -15.3 %). K80 scaling is near linear (8-worker
efficiency 0.96, 1.00, 0.98, 0.92); P100 with 1 PS plateaus after 4-5 workers; a second PS raises 8-worker ResNet-15 speed from 103.69 to
176.67 steps/s (1.70x).
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers._item import Item
from perfmodel.papers.cmdare import _cluster_size as _impl

ITEM = Item(
    paper="CM-DARE",
    number="not numbered in the upstream sources",
    title="Steps/s vs #P100 workers with 2 PS; the 96 cluster means and scaling observations",
    upstream="cluster_size_training_speed.pdf (redraws cell 4)",
    sources=("redraws cell 1 inline mean and std arrays (transcribed)",
             ("cake-lab/CM-DARE: "
              "data/processed_data/speed_and_cluster_size/{k80,p100,p100ps2}/<cfg>worker<N>/run_.-tag-global_step_sec.csv")),
    procedure=("Plot the four *p100ps2 arrays (3.3x1.5 in). The 96 cluster means are recomputed from the raw "
               "files as the mean of Value over rows with Step >= 2000; the scaling observations (8-worker "
               "efficiency, linear-scaling MAPE, 2-PS gains) come from the inline arrays."),
    status="INLINE / APPROX-DATA",
    numbers_area="cluster",
    legacy_id="cluster_size_training_speed",
    notebook="notebooks/03-cluster-speed.ipynb",
    test="tests/papers/test_cluster_figures.py",
)

__all__ = ["ITEM", "data", "numbers", "figure"]


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
