"""Lifetime CDF of transient GPU servers per region (k80/p100/v100_cdf); time between failures.

K80: 48 + 48 + 30 + 30 = 156 servers (the README's "over 156 instances"); six regions overall. The CM-DARE repository holds no
raw lifetime data; the older transient-deep-learning ``lifetime/lifetime.csv`` is a different, smaller sample. The fitted rate is
a = 0.00033254 per minute (mean time between failures about 50 h); the Weibull, gamma and lognormal curves of the notebook are
overlaid by hand, not fitted.
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers._item import Item
from perfmodel.papers.cmdare import _lifetime_cdf as _impl

ITEM = Item(
    paper="CM-DARE",
    number="Fig. 2 = k80_cdf (CM-DARE README numbering)",
    title="Lifetime CDF of transient GPU servers per region (k80/p100/v100_cdf); time between failures",
    upstream="k80_cdf.pdf, p100_cdf.pdf, v100_cdf.pdf (redraws cells 13-15); time between failures S2020 cells 25-30",
    sources=("redraws cells 13-15 inline CDF arrays (transcribed)",
             "S2020 cells 25-30 inline inter-failure times (transcribed)"),
    procedure=("Each inline array has 25 values plotted with x-ticks 1, 5, ..., 25: the value at index i is the "
               "fraction of servers revoked within i+1 hours (the final 1 is the forced 24-h termination). Sample "
               "sizes come from the denominators. Time between failures: curve_fit of 1 - exp(-a x) (x in "
               "minutes, p0 = 0.001) on the 128-bin histogram CDF of 128 inter-failure times."),
    status="INLINE",
    numbers_area="lifetimes",
    legacy_id="lifetime_cdf",
    variants=({"gpu": "K80"}, {"gpu": "P100"}, {"gpu": "V100"}),
    notebook="notebooks/06-lifetimes.ipynb",
    test="tests/papers/test_transient_lifetime_cdf.py",
    authors_image="CM:img/k80_cdf.png",
)

__all__ = ["ITEM", "data", "numbers", "figure"]


def data(gpu="K80") -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.lifetime_cdf_data``)."""
    return _impl.lifetime_cdf_data(gpu=gpu)


def numbers() -> pd.DataFrame:
    """Paper value next to reproduced value (``COMPARISON_COLUMNS``) for the whole ``lifetimes`` area (rows of other items name them in ``item``)."""
    return _impl.lifetime_numbers_data()


def figure(data: pd.DataFrame | None = None, ax=None, *, gpu="K80"):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return _impl.lifetime_cdf(gpu=gpu, data=data, ax=ax)
