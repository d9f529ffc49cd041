"""Normalized runtime and cost vs cluster size, 1 vs 2 PS, K80 and V100.

1-PS K80 durations 1.9337, 1.3140, 0.9621, 0.7607, 0.6439, 0.5431, 0.4927 h for N = 2..8. Its headline numbers are rows of the
``icac_clusters`` area, computed by ``mixed_gpu_clusters``.

Paper: ICAC'19, Fig. 6a/6b. Upstream: 1ps_2ps_time.pdf, 1ps_2ps_cost.pdf.

Sources
-------
* cake-lab/transient-deep-learning: data/training/experiment_1ps_vs_2ps/{1ps_k80/N_data.csv, 2psNk, 1psNv, 2psNv}/

Procedure
---------
Runtime and cost of clusters of 2-8 workers (K80 or V100, 1 or 2 PS) in % of the single-K80 training (the caption): the mean time and
recorded cost of the 10 single-K80 on-demand runs. The paper's drawn points imply a 1.5 % lower baseline (3.854 h, $2.786).
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers.icac19 import _clusters as _impl

#: paper the item belongs to ("perfmodel": beyond the papers)
PAPER = "ICAC'19"
#: figure/table number as the paper prints it
NUMBER = "Fig. 6a/6b"
#: title
TITLE = "Normalized runtime and cost vs cluster size, 1 vs 2 PS, K80 and V100"
#: the upstream file / notebook cell it redraws
UPSTREAM = "1ps_2ps_time.pdf, 1ps_2ps_cost.pdf"
#: upstream data files
SOURCES = ("cake-lab/transient-deep-learning: data/training/experiment_1ps_vs_2ps/{1ps_k80/N_data.csv, 2psNk, 1psNv, 2psNv}/",)
#: procedure
PROCEDURE = "Runtime and cost of clusters of 2-8 workers (K80 or V100, 1 or 2 PS) in % of the single-K80 training (the caption): the mean time and recorded cost of the 10 single-K80 on-demand runs. The paper's drawn points imply a 1.5 % lower baseline (3.854 h, $2.786)."
#: tolerance rule of its numbers
TOLERANCE = "EXACT numbers within 1e-6 relative (or the printed rounding as atol); APPROX numbers within the rule of their row in datasets/reference/paper_numbers"
#: reproduction status of the data behind it
STATUS = "EXACT-DATA (time) / APPROX (cost baseline)"
#: non-empty: why the item cannot be reproduced at all
UNAVAILABLE = ""
#: non-empty: why figure() draws nothing
NO_FIGURE = ""
#: non-empty: why numbers() is empty
NO_NUMBERS = ""
#: datasets/reference/paper_numbers area its numbers() compares (the whole area)
NUMBERS_AREA = ""
#: item whose numbers() computes this item's numbers
NUMBERS_FROM = "mixed_gpu_clusters"
#: the id before the papers were packages (still accepted by --only)
LEGACY_ID = "icac_fig6"
#: keyword arguments of each figure the runner draws
VARIANTS = ({},)
#: notebook showing it
NOTEBOOK = "notebooks/04-icac-clusters.ipynb"
#: test checking it
TEST = "tests/papers/test_icac_cluster_figures.py"
#: the authors' own image of the figure (a registry key of kind "image"; the report shows it beside ours), "" when none
AUTHORS_IMAGE = ""

__all__ = ["data", "numbers", "figure"]


def data() -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.icac_fig6_data``)."""
    return _impl.icac_fig6_data()


def numbers() -> pd.DataFrame:
    """This item's rows of the comparison table that ``mixed_gpu_clusters`` computes (``COMPARISON_COLUMNS``)."""
    return _item.numbers_from(__name__)


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return _impl.icac_fig6(data=data, ax=ax)
