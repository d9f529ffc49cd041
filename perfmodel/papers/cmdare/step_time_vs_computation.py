"""Step time vs normalized computation (model/GPU), both GPUs pooled.

``Model/GPU`` is the min-max of F/TFLOPS over both GPUs: min = 630989589/9.526 (ResNet-15 on P100 -> 0), max =
22864820174/4.113 (Shake-Shake big on K80 -> 1). The same column name means a within-file min-max of the model FLOPs in
``0latency_k80*.csv`` / ``0latency_p100*.csv``: the upstream files are not consistent; perfmodel's loaders name the two meanings apart.

CM-DARE ``speed_computation_correlation.pdf``: step time vs normalized computation (model FLOPs / GPU TFLOPS, min-max over
both GPUs), K80 and P100 pooled. Source: ``0latency_norm_computation.csv`` (520 rows), sp2 cells 33–34.
"""
from __future__ import annotations

import pandas as pd

from perfmodel import datasets as ds
from perfmodel.papers import _item
from perfmodel.papers._item import Item
from perfmodel.plotting import scatter_figure

ITEM = Item(
    paper="CM-DARE",
    number="not numbered in the upstream sources",
    title="Step time vs normalized computation (model/GPU), both GPUs pooled",
    upstream="speed_computation_correlation.pdf (sp2 cells 33-34; older version cell 20)",
    sources=("cake-lab/CM-DARE: data/processed_data/speed_data/0latency_norm_computation.csv",),
    procedure=("Scatter of Step Time (s) against Model/GPU ('Normalized computation') over 520 rows = 20 CNNs x 2 "
               "GPUs x 13 samples."),
    status="EXACT-DATA",
    tolerance="no quoted numbers",
    no_numbers="The papers quote no number for it beyond the data checked in its test.",
    legacy_id="speed_computation_correlation",
    notebook="notebooks/02-speed-prediction.ipynb",
    test="tests/papers/test_speed_figures.py",
)

__all__ = ["ITEM", "data", "numbers", "figure"]


def speed_computation_correlation_data() -> pd.DataFrame:
    """520 rows: ``gpu``, ``model``, ``normalized_computation``, ``step_time_s``."""
    return ds.load_speed_file("norm_computation")[["gpu", "model", "normalized_computation", "step_time_s"]]


def speed_computation_correlation(data: pd.DataFrame | None = None, *, ax=None):
    """The figure (2×2 in; K80 'x', P100 '^', alpha 0.1, as the notebook)."""
    return scatter_figure(speed_computation_correlation_data() if data is None else data, x="normalized_computation", y="step_time_s", xlabel="Normalized computation", ax=ax)


def data() -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.speed_computation_correlation_data``)."""
    return speed_computation_correlation_data()


def numbers() -> pd.DataFrame:
    """No quoted numbers (see ``ITEM.no_numbers``): an empty ``COMPARISON_COLUMNS`` frame."""
    return _item.no_numbers(__name__)


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return speed_computation_correlation(data=data, ax=ax)
