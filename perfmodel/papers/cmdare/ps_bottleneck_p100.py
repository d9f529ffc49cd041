"""1 PS vs 2 PS speed vs #P100 workers, per CNN (ps_bot_p100_1..4).

The parameter-server bottleneck: with one PS the P100 cluster plateaus after 4-5 workers; a second PS lifts ResNet-15 and
ResNet-32 by about 1.7x, while Shake-Shake big stays near 6.5 steps/s (communication-bound).
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers._item import Item
from perfmodel.papers.cmdare import _ps_bottleneck as _impl

ITEM = Item(
    paper="CM-DARE",
    number="Fig. 3 = ps_bot_p100_1 (CM-DARE README numbering)",
    title="1 PS vs 2 PS speed vs #P100 workers, per CNN (ps_bot_p100_1..4)",
    upstream="ps_bot_p100_{1,2,3,4}.pdf (redraws cells 8-11)",
    sources=("redraws cell 1 inline arrays (transcribed)",
             "cake-lab/CM-DARE: data/processed_data/speed_and_cluster_size/{p100,p100ps2}/"),
    procedure=("For CNN k (1 = ResNet-15, 2 = ResNet-32, 3 = Shake-Shake small, 4 = Shake-Shake big): *p100 ('1 "
               "PS') vs *p100ps2 ('2 PS'), error bars = std arrays, 2x2 in, y-limits 205 / auto / 42 / 8.1."),
    status="INLINE / APPROX-DATA",
    tolerance="no quoted numbers",
    no_numbers="The papers quote no number for it beyond the data checked in its test.",
    legacy_id="ps_bot_p100",
    variants=({"k": 1}, {"k": 2}, {"k": 3}, {"k": 4}),
    notebook="notebooks/03-cluster-speed.ipynb",
    test="tests/papers/test_cluster_figures.py",
    authors_image="CM:img/ps_bot_p100_1.png",
)

__all__ = ["ITEM", "data", "numbers", "figure"]


def data(k=1) -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.ps_bot_p100_data``)."""
    return _impl.ps_bot_p100_data(k=k)


def numbers() -> pd.DataFrame:
    """No quoted numbers (see ``ITEM.no_numbers``): an empty ``COMPARISON_COLUMNS`` frame."""
    return _item.no_numbers(__name__)


def figure(data: pd.DataFrame | None = None, ax=None, *, k=1):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return _impl.ps_bot_p100(k=k, data=data, ax=ax)
