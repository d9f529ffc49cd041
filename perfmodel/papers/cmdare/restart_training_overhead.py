"""Extra training time vs steps since the last checkpoint.

Overheads 18.98, 87.72, 146.81, 197.01, 253.66 s. The raw chief-rejoining files match values of the inline arrays but with a
shifted and partly edited mapping (some inline values are in no file), so the figure uses the inline arrays.

Paper: CM-DARE, not numbered in the upstream sources. Upstream: restart_training_overhead.pdf (S2020 cell 14).

Sources
-------
* S2020 cell 14 inline arrays (transcribed)
* cake-lab/CM-DARE: data/processed_data/chief_rejoining/*.csv (partial raw data)

Procedure
---------
x = steps since the last checkpoint in {1.5k, 2k, 2.5k, 3k, 3.5k}; y = mean(y_i) - mean(ybase) with ybase = [1357.3, 1361.28];
error bar = np.std(y_i).
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers import _transient as _impl

#: paper the item belongs to ("perfmodel": beyond the papers)
PAPER = "CM-DARE"
#: figure/table number as the paper prints it
NUMBER = "not numbered in the upstream sources"
#: title
TITLE = "Extra training time vs steps since the last checkpoint"
#: the upstream file / notebook cell it redraws
UPSTREAM = "restart_training_overhead.pdf (S2020 cell 14)"
#: upstream data files
SOURCES = (
    "S2020 cell 14 inline arrays (transcribed)",
    "cake-lab/CM-DARE: data/processed_data/chief_rejoining/*.csv (partial raw data)",
)
#: procedure
PROCEDURE = "x = steps since the last checkpoint in {1.5k, 2k, 2.5k, 3k, 3.5k}; y = mean(y_i) - mean(ybase) with ybase = [1357.3, 1361.28]; error bar = np.std(y_i)."
#: tolerance rule of its numbers
TOLERANCE = "EXACT numbers within 1e-6 relative (or the printed rounding as atol); APPROX numbers within the rule of their row in datasets/reference/paper_numbers"
#: reproduction status of the data behind it
STATUS = "INLINE"
#: non-empty: why the item cannot be reproduced at all
UNAVAILABLE = ""
#: non-empty: why figure() draws nothing
NO_FIGURE = ""
#: non-empty: why numbers() is empty
NO_NUMBERS = ""
#: datasets/reference/paper_numbers area its numbers() compares (the whole area)
NUMBERS_AREA = ""
#: item whose numbers() computes this item's numbers
NUMBERS_FROM = "vm_startup_breakdown"
#: the id before the papers were packages (still accepted by --only)
LEGACY_ID = "restart_training_overhead"
#: keyword arguments of each figure the runner draws
VARIANTS = ({},)
#: notebook showing it
NOTEBOOK = "notebooks/09-restart-startup.ipynb"
#: test checking it
TEST = "tests/papers/test_transient_overheads.py"
#: the authors' own image of the figure (a registry key of kind "image"; the report shows it beside ours), "" when none
AUTHORS_IMAGE = ""

__all__ = ["data", "numbers", "figure"]


def data() -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.restart_training_overhead_data``)."""
    return _impl.restart_training_overhead_data()


def numbers() -> pd.DataFrame:
    """This item's rows of the comparison table that ``vm_startup_breakdown`` computes (``COMPARISON_COLUMNS``)."""
    return _item.numbers_from(__name__)


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return _impl.restart_training_overhead(data=data, ax=ax)
