"""Per-operator step-time predictor on NeuSight's single-GPU training and inference labels (V100, A100-80GB, L4, H100) vs NeuSight, Li et al., roofline, Habitat.

The labels are test data only.

Paper: perfmodel, external benchmark (NeuSight's published labels). Upstream: sitar-lab/NeuSight labels and reported errors.

Sources
-------
* sitar-lab/NeuSight: the single-GPU training and inference labels and the published per-predictor errors

Procedure
---------
predict_step_time for every eager single-GPU label (a GPU is never in the training set of the model scored on it); absolute %
error per label next to NeuSight's own and its baselines'.
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers.external import _neusight as _impl

#: paper the item belongs to ("perfmodel": beyond the papers)
PAPER = "perfmodel"
#: figure/table number as the paper prints it
NUMBER = "external benchmark (NeuSight's published labels)"
#: title
TITLE = "Per-operator step-time predictor on NeuSight's single-GPU training and inference labels (V100, A100-80GB, L4, H100) vs NeuSight, Li et al., roofline, Habitat"
#: the upstream file / notebook cell it redraws
UPSTREAM = "sitar-lab/NeuSight labels and reported errors"
#: upstream data files
SOURCES = ("sitar-lab/NeuSight: the single-GPU training and inference labels and the published per-predictor errors",)
#: procedure
PROCEDURE = "predict_step_time for every eager single-GPU label (a GPU is never in the training set of the model scored on it); absolute % error per label next to NeuSight's own and its baselines'."
#: tolerance rule of its numbers
TOLERANCE = "no quoted numbers"
#: reproduction status of the data behind it
STATUS = "perfmodel analysis"
#: non-empty: why the item cannot be reproduced at all
UNAVAILABLE = ""
#: non-empty: why figure() draws nothing
NO_FIGURE = ""
#: non-empty: why numbers() is empty
NO_NUMBERS = "An external benchmark: the errors are in data() and checked in its test; there is no paper value to compare."
#: datasets/reference/paper_numbers area its numbers() compares (the whole area)
NUMBERS_AREA = ""
#: item whose numbers() computes this item's numbers
NUMBERS_FROM = ""
#: the id before the papers were packages (still accepted by --only)
LEGACY_ID = "neusight_benchmark"
#: keyword arguments of each figure the runner draws
VARIANTS = ({},)
#: notebook showing it
NOTEBOOK = "notebooks/11-neusight-benchmark.ipynb"
#: test checking it
TEST = "tests/papers/test_neusight_benchmark.py"

__all__ = ["data", "numbers", "figure"]


def data() -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.neusight_benchmark_data``)."""
    return _impl.neusight_benchmark_data()


def numbers() -> pd.DataFrame:
    """No quoted numbers (see ``NO_NUMBERS``): an empty ``COMPARISON_COLUMNS`` frame."""
    return _item.no_numbers(__name__)


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return _impl.neusight_benchmark(data=data, ax=ax)
