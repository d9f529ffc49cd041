"""K80 speed vs workers, ResNets / Shake-Shakes (ps_bot_k80_1..2).

K80 clusters scale near linearly: "speed(n) = n * speed(1)" has a MAPE over n = 2..8 of 4.34 %, 0.32 %, 1.02 %, 3.93 %.
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers._item import Item
from perfmodel.papers.cmdare import _ps_bottleneck as _impl

ITEM = Item(
    paper="CM-DARE",
    number="not numbered in the upstream sources",
    title="K80 speed vs workers, ResNets / Shake-Shakes (ps_bot_k80_1..2)",
    upstream="ps_bot_k80_{1,2}.pdf (redraws cells 5-6, save commented out)",
    sources=("redraws cell 1 inline arrays (transcribed)",),
    procedure="K80 steps/s vs 1-8 workers with 1 PS: k = 1 the ResNets, k = 2 the Shake-Shakes; 2x2 in.",
    status="INLINE",
    tolerance="no quoted numbers",
    no_numbers="The papers quote no number for it beyond the data checked in its test.",
    legacy_id="ps_bot_k80",
    variants=({"k": 1}, {"k": 2}),
    notebook="notebooks/03-cluster-speed.ipynb",
    test="tests/papers/test_cluster_figures.py",
)

__all__ = ["ITEM", "data", "numbers", "figure"]


def data(k=1) -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.ps_bot_k80_data``)."""
    return _impl.ps_bot_k80_data(k=k)


def numbers() -> pd.DataFrame:
    """No quoted numbers (see ``ITEM.no_numbers``): an empty ``COMPARISON_COLUMNS`` frame."""
    return _item.no_numbers(__name__)


def figure(data: pd.DataFrame | None = None, ax=None, *, k=1):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return _impl.ps_bot_k80(k=k, data=data, ax=ax)
