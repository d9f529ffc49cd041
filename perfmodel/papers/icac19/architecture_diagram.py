"""Architecture diagram.

The paper's Fig. 2 sketches the system (parameter server, transient workers, the cloud's revocation notices); nothing in the
published data corresponds to it, so there is nothing to reproduce.
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers._item import Item

ITEM = Item(
    paper="ICAC'19",
    number="Fig. 2",
    title="Architecture diagram",
    upstream="-",
    sources=(),
    procedure="-",
    status="n/a",
    tolerance="no quoted numbers",
    unavailable="a diagram, no data behind it",
    no_figure="Not reproducible: a diagram, no data behind it.",
    no_numbers="Not reproducible: a diagram, no data behind it.",
    legacy_id="icac_fig2",
    variants=(),
)

__all__ = ["ITEM", "data", "numbers", "figure"]


def data() -> pd.DataFrame:
    """An empty frame: no data behind the item (see ``ITEM.no_figure``)."""
    return _item.no_data(__name__)


def numbers() -> pd.DataFrame:
    """No quoted numbers (see ``ITEM.no_numbers``): an empty ``COMPARISON_COLUMNS`` frame."""
    return _item.no_numbers(__name__)


def figure(data: pd.DataFrame | None = None, ax=None):
    """No figure (see ``ITEM.no_figure``): raises :class:`perfmodel.papers.NoFigureError`."""
    return _item.no_figure(__name__)
