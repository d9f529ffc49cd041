"""Checkpoint-prediction results: LR / SVR / PCA on the checkpoint data.

ckpt.csv LR: R2 0.922251475149973, slope 0.02000607 s/MB, intercept 3.75119232 s. The stored "Local duration ~ Size" result is
stale (a re-run gives R2 0.367); the stored SVR grid best differs from a re-run grid (fixed-parameter results are exact). ``data()`` is
the comparison table itself (no separate tidy input).

Paper: CM-DARE, not numbered in the upstream sources (results likely a table). Upstream: Sigmetrics2020_checkpoint_overhead.ipynb (ckpt).

Sources
-------
* cake-lab/CM-DARE: data/processed_data/checkpoint/ckpt.csv
* cake-lab/CM-DARE: data/processed_data/checkpoint/unaggregated_training.csv
* cake-lab/CM-DARE: data/processed_data/checkpoint/unaggregated_test.csv
* cake-lab/CM-DARE: data/processed_data/checkpoint/whole_data.csv

Procedure
---------
LR Duration mean ~ Checkpoint Size on ckpt.csv tested on the 4 hard-coded test CNNs; model-disjoint 80/20 unaggregated split;
final LR and SVR(rbf, C=10, gamma='auto', epsilon=0.14) on whole_data.csv with a random 80/20 split (rs=0).
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers.cmdare import _checkpoint as _impl

#: paper the item belongs to ("perfmodel": beyond the papers)
PAPER = "CM-DARE"
#: figure/table number as the paper prints it
NUMBER = "not numbered in the upstream sources (results likely a table)"
#: title
TITLE = "Checkpoint-prediction results: LR / SVR / PCA on the checkpoint data"
#: the upstream file / notebook cell it redraws
UPSTREAM = "Sigmetrics2020_checkpoint_overhead.ipynb (ckpt)"
#: upstream data files
SOURCES = (
    "cake-lab/CM-DARE: data/processed_data/checkpoint/ckpt.csv",
    "cake-lab/CM-DARE: data/processed_data/checkpoint/unaggregated_training.csv",
    "cake-lab/CM-DARE: data/processed_data/checkpoint/unaggregated_test.csv",
    "cake-lab/CM-DARE: data/processed_data/checkpoint/whole_data.csv",
)
#: procedure
PROCEDURE = "LR Duration mean ~ Checkpoint Size on ckpt.csv tested on the 4 hard-coded test CNNs; model-disjoint 80/20 unaggregated split; final LR and SVR(rbf, C=10, gamma='auto', epsilon=0.14) on whole_data.csv with a random 80/20 split (rs=0)."
#: tolerance rule of its numbers
TOLERANCE = "EXACT numbers within 1e-6 relative (or the printed rounding as atol); APPROX numbers within the rule of their row in datasets/reference/paper_numbers"
#: reproduction status of the data behind it
STATUS = "EXACT-DATA"
#: non-empty: why the item cannot be reproduced at all
UNAVAILABLE = ""
#: non-empty: why figure() draws nothing
NO_FIGURE = "A table of fitted-model results; the papers draw no figure for it."
#: non-empty: why numbers() is empty
NO_NUMBERS = ""
#: datasets/reference/paper_numbers area its numbers() compares (the whole area)
NUMBERS_AREA = "checkpoint"
#: item whose numbers() computes this item's numbers
NUMBERS_FROM = ""
#: the id before the papers were packages (still accepted by --only)
LEGACY_ID = "checkpoint_prediction"
#: keyword arguments of each figure the runner draws
VARIANTS = ()
#: notebook showing it
NOTEBOOK = "notebooks/05-checkpoint-time.ipynb"
#: test checking it
TEST = "tests/papers/test_checkpoint_numbers.py"
#: the authors' own image of the figure (a registry key of kind "image"; the report shows it beside ours), "" when none
AUTHORS_IMAGE = ""

__all__ = ["data", "numbers", "figure"]


def data() -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.checkpoint_prediction_data``)."""
    return _impl.checkpoint_prediction_data()


def numbers() -> pd.DataFrame:
    """Paper value next to reproduced value (``COMPARISON_COLUMNS``) for the whole ``checkpoint`` area (rows of other items name them in ``item``)."""
    return _impl.checkpoint_prediction_data()


def figure(data: pd.DataFrame | None = None, ax=None):
    """No figure (see ``NO_FIGURE``): raises :class:`perfmodel.papers.NoFigureError`."""
    return _item.no_figure(__name__)
