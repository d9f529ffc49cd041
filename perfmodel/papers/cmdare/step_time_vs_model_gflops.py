"""Step time vs normalized model GFLOPs, K80 & P100, 20 CNNs.

One sample is one TensorBoard ``global_step/sec`` value (logged every 100 steps); ``Step Time (s)`` = 1/``Speed (steps/sec)``
(max relative difference 4.5e-9). ``Normalized Model`` = (F - F_min)/(F_max - F_min) with F = ``Model FLOPs``, F_min = ResNet-15
630989589, F_max = Shake-Shake big 22864820174; the rows are shuffled with ``random_state=0`` upstream (order only).

CM-DARE ``speed_complexity_correlation.pdf`` (README "Fig 1"): step time vs normalized model GFLOPs, K80 and P100, 20 CNNs.

Source: ``0latency_k80_new.csv`` + ``0latency_p100_new2.csv`` (260 rows each), sp2 cells 31–32.
"""
from __future__ import annotations

import pandas as pd

from perfmodel import datasets as ds
from perfmodel.papers import _item
from perfmodel.papers._item import Item
from perfmodel.plotting import scatter_figure

ITEM = Item(
    paper="CM-DARE",
    number="Fig. 1 (CM-DARE README numbering)",
    title="Step time vs normalized model GFLOPs, K80 & P100, 20 CNNs",
    upstream="speed_complexity_correlation.pdf (sp2 cells 31-32)",
    sources=("cake-lab/CM-DARE: data/processed_data/speed_data/0latency_k80_new.csv",
             "cake-lab/CM-DARE: data/processed_data/speed_data/0latency_p100_new2.csv"),
    procedure=("Scatter of Step Time (s) against Normalized Model over 20 CNNs x 13 samples per GPU (260 rows "
               "each); K80 marker 'x', P100 '^', alpha 0.1, 2x2 in."),
    status="EXACT-DATA",
    tolerance="no quoted numbers",
    no_numbers="The papers quote no number for it beyond the data checked in its test.",
    legacy_id="speed_complexity_correlation",
    notebook="notebooks/02-speed-prediction.ipynb",
    test="tests/papers/test_speed_figures.py",
    authors_image="CM:img/speed_complexity_correlation.png",
)

__all__ = ["ITEM", "data", "numbers", "figure"]


def speed_complexity_correlation_data() -> pd.DataFrame:
    """520 rows: ``gpu``, ``model``, ``normalized_model``, ``step_time_s`` (the two per-GPU files, concatenated)."""
    cols = ["gpu", "model", "normalized_model", "step_time_s"]
    return pd.concat([ds.load_speed_file("k80_new")[cols], ds.load_speed_file("p100_new2")[cols]], ignore_index=True)


def speed_complexity_correlation(data: pd.DataFrame | None = None, *, ax=None):
    """The figure (2×2 in; K80 'x', P100 '^', alpha 0.1, as the notebook)."""
    return scatter_figure(speed_complexity_correlation_data() if data is None else data, x="normalized_model", y="step_time_s", xlabel="Normalized Model GFLOPs", ax=ax)


def data() -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.speed_complexity_correlation_data``)."""
    return speed_complexity_correlation_data()


def numbers() -> pd.DataFrame:
    """No quoted numbers (see ``ITEM.no_numbers``): an empty ``COMPARISON_COLUMNS`` frame."""
    return _item.no_numbers(__name__)


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return speed_complexity_correlation(data=data, ax=ax)
