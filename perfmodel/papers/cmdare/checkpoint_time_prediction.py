"""Checkpoint-prediction results: LR / SVR / PCA on the checkpoint data.

ckpt.csv LR: R2 0.922251475149973, slope 0.02000607 s/MB, intercept 3.75119232 s. The stored "Local duration ~ Size" result is
stale (a re-run gives R2 0.367); the stored SVR grid best differs from a re-run grid (fixed-parameter results are exact). ``data()`` is
the comparison table itself (no separate tidy input).
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers._item import Item
from perfmodel.papers.cmdare import _checkpoint as _impl

ITEM = Item(
    paper="CM-DARE",
    number="not numbered in the upstream sources (results likely a table)",
    title="Checkpoint-prediction results: LR / SVR / PCA on the checkpoint data",
    upstream="Sigmetrics2020_checkpoint_overhead.ipynb (ckpt)",
    sources=("cake-lab/CM-DARE: data/processed_data/checkpoint/ckpt.csv",
             "cake-lab/CM-DARE: data/processed_data/checkpoint/unaggregated_training.csv",
             "cake-lab/CM-DARE: data/processed_data/checkpoint/unaggregated_test.csv",
             "cake-lab/CM-DARE: data/processed_data/checkpoint/whole_data.csv"),
    procedure=("LR Duration mean ~ Checkpoint Size on ckpt.csv tested on the 4 hard-coded test CNNs; "
               "model-disjoint 80/20 unaggregated split; final LR and SVR(rbf, C=10, gamma='auto', epsilon=0.14) "
               "on whole_data.csv with a random 80/20 split (rs=0)."),
    status="EXACT-DATA",
    no_figure="A table of fitted-model results; the papers draw no figure for it.",
    numbers_area="checkpoint",
    legacy_id="checkpoint_prediction",
    variants=(),
    notebook="notebooks/05-checkpoint-time.ipynb",
    test="tests/papers/test_checkpoint_numbers.py",
)

__all__ = ["ITEM", "data", "numbers", "figure"]


def data() -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.checkpoint_prediction_data``)."""
    return _impl.checkpoint_prediction_data()


def numbers() -> pd.DataFrame:
    """Paper value next to reproduced value (``COMPARISON_COLUMNS``) for the whole ``checkpoint`` area (rows of other items name them in ``item``)."""
    return _impl.checkpoint_prediction_data()


def figure(data: pd.DataFrame | None = None, ax=None):
    """No figure (see ``ITEM.no_figure``): raises :class:`perfmodel.papers.NoFigureError`."""
    return _item.no_figure(__name__)
