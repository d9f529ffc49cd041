"""Architecture diagram.

The paper's Fig. 2 sketches the system (parameter server, transient workers, the cloud's revocation notices); nothing in the
published data corresponds to it, so there is nothing to reproduce.

Paper: ICAC'19, Fig. 2. Upstream: -.

Procedure
---------
-
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item

#: paper the item belongs to ("perfmodel": beyond the papers)
PAPER = "ICAC'19"
#: figure/table number as the paper prints it
NUMBER = "Fig. 2"
#: title
TITLE = "Architecture diagram"
#: the upstream file / notebook cell it redraws
UPSTREAM = "-"
#: upstream data files
SOURCES = ()
#: procedure
PROCEDURE = "-"
#: tolerance rule of its numbers
TOLERANCE = "no quoted numbers"
#: reproduction status of the data behind it
STATUS = "n/a"
#: non-empty: why the item cannot be reproduced at all
UNAVAILABLE = "a diagram, no data behind it"
#: non-empty: why figure() draws nothing
NO_FIGURE = "Not reproducible: a diagram, no data behind it."
#: non-empty: why numbers() is empty
NO_NUMBERS = "Not reproducible: a diagram, no data behind it."
#: datasets/reference/paper_numbers area its numbers() compares (the whole area)
NUMBERS_AREA = ""
#: item whose numbers() computes this item's numbers
NUMBERS_FROM = ""
#: the id before the papers were packages (still accepted by --only)
LEGACY_ID = "icac_fig2"
#: keyword arguments of each figure the runner draws
VARIANTS = ()
#: notebook showing it
NOTEBOOK = ""
#: test checking it
TEST = ""
#: the authors' own image of the figure (a registry key of kind "image"; the report shows it beside ours), "" when none
AUTHORS_IMAGE = ""

__all__ = ["data", "numbers", "figure"]


def data() -> pd.DataFrame:
    """An empty frame: no data behind the item (see ``NO_FIGURE``)."""
    return _item.no_data(__name__)


def numbers() -> pd.DataFrame:
    """No quoted numbers (see ``NO_NUMBERS``): an empty ``COMPARISON_COLUMNS`` frame."""
    return _item.no_numbers(__name__)


def figure(data: pd.DataFrame | None = None, ax=None):
    """No figure (see ``NO_FIGURE``): raises :class:`perfmodel.papers.NoFigureError`."""
    return _item.no_figure(__name__)
