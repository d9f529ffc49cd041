"""Lifetime CDF of preemptible PS (CPU), K80, P100, V100 servers.

Fraction revoked before 24 h: PS 0.1753 (n=348), K80 0.34375 (n=128), P100 0.2381 (n=42), V100 0.3485 (n=66); in the first hour
V100 0.2727, K80 0.078. The paper's text: about 70 % live 24 h, about 20 % are revoked in the first 2 h.
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers._item import Item
from perfmodel.papers import _transient as _impl

ITEM = Item(
    paper="ICAC'19",
    number="Fig. 3",
    title="Lifetime CDF of preemptible PS (CPU), K80, P100, V100 servers",
    upstream="lifetime_new.pdf (lifetime/plot.py)",
    sources=("lifetime/plot.py inline arrays cdf_3, cdf_1_2, cdf_2_2, cdf_4 (transcribed)",
             "cake-lab/transient-deep-learning: data/lifetime/lifetime.csv"),
    procedure=("CDF of server lifetimes over 0-24 h per server type from the inline arrays; fraction revoked "
               "before 24 h and in the first hour."),
    status="INLINE",
    numbers_from="vm_startup_breakdown",
    legacy_id="icac_fig3",
    notebook="notebooks/09-restart-startup.ipynb",
    test="tests/papers/test_transient_overheads.py",
)

__all__ = ["ITEM", "data", "numbers", "figure"]


def data() -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.icac_fig3_data``)."""
    return _impl.icac_fig3_data()


def numbers() -> pd.DataFrame:
    """This item's rows of the comparison table that ``vm_startup_breakdown`` computes (``COMPARISON_COLUMNS``)."""
    return _item.numbers_from(__name__)


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return _impl.icac_fig3(data=data, ax=ax)
