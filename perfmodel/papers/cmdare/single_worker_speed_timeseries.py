"""Steps/s vs step, one worker, 4 CNNs (K80 saved; P100, V100 panels).

Only the K80 panel is saved upstream; the P100 and V100 panels are drawn but not saved. Mean speeds (steps/s) K80 / P100 / V100:
ResNet-15 9.4527 / 21.1586 / 27.3754, ResNet-32 4.5564 / 12.1919 / 15.6150, Shake-Shake small 2.5733 / 6.9922 / 8.8029, Shake-Shake big
0.6961 / 1.9756 / 2.1826 (the P100/V100 numbers equal the summary row "mean" of the files). These are the only V100 speed
measurements in the data.
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers._item import Item
from perfmodel.papers.cmdare import _single_worker as _impl

ITEM = Item(
    paper="CM-DARE",
    number="not numbered in the upstream sources",
    title="Steps/s vs step, one worker, 4 CNNs (K80 saved; P100, V100 panels)",
    upstream="one_k80_cluster_training_speed_time_series.pdf (sigmetrics2020_figure3 cells 1-2)",
    sources=(("cake-lab/CM-DARE: "
              "data/processed_data/speed_data_base/{res15,res32,shakesmall,shakebig}{k80,p100,v100}/data.csv"),),
    procedure=("Drop rows 40, 41 for K80 (two summary rows; the K80 files keep a leading 0,0 row so the line "
               "starts at the origin) and rows 0, 39, 40 for P100/V100 (first sample at step 101 plus the summary "
               "rows); plot Value (steps/s) vs Step, x 0-4000, y 0-11, 3.3x1.5 in. Mean speed over the plotted "
               "samples."),
    status="EXACT-DATA",
    numbers_area="timeseries",
    legacy_id="single_worker_timeseries",
    variants=({"gpu": "K80"}, {"gpu": "P100"}, {"gpu": "V100"}),
    notebook="notebooks/02-speed-prediction.ipynb",
    test="tests/papers/test_speed_figures.py",
)

__all__ = ["ITEM", "data", "numbers", "figure"]


def data(gpu="K80") -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.single_worker_timeseries_data``)."""
    return _impl.single_worker_timeseries_data(gpu=gpu)


def numbers() -> pd.DataFrame:
    """Paper value next to reproduced value (``COMPARISON_COLUMNS``) for the whole ``timeseries`` area (rows of other items name them in ``item``)."""
    return _impl.single_worker_numbers_data()


def figure(data: pd.DataFrame | None = None, ax=None, *, gpu="K80"):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return _impl.single_worker_timeseries(gpu=gpu, data=data, ax=ax)
