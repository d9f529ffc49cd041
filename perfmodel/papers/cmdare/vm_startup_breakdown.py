"""VM start-up: provisioning / staging / booting (s), preemptible vs on-demand.

The y label says "VM Startup Time Cost(ms)" but the values are seconds (the measuring code records ms and the CSVs were divided
by 1000): Provisioning = insert -> STAGING, Staging = STAGING -> RUNNING, Booting = RUNNING -> first successful SSH. Preemptible servers
take longer in Staging (41-49 s vs 28-33 s on-demand).

Its numbers() computes the whole ``transient`` area of ``datasets/reference/paper_numbers`` at once: the rows of the other start-up,
restart and revocation items (and of ICAC'19 Figs. 3 and 5) name their item in the ``item`` column and are reported with them.

Paper: CM-DARE, not numbered in the upstream sources. Upstream: startup_breakdown.pdf (S2020 cells 5 and 7).

Sources
-------
* cake-lab/CM-DARE: data/processed_data/startup_time/{pre_east,pre_west,on_demand_east,on_demand_west}/vm_time_measure_*.csv

Procedure
---------
Two panels (east | west), 4 stacked bars each (preemptible K80, P100; on-demand K80, P100); bar = mean of the column, error bar =
np.std (ddof=0).
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
TITLE = "VM start-up: provisioning / staging / booting (s), preemptible vs on-demand"
#: the upstream file / notebook cell it redraws
UPSTREAM = "startup_breakdown.pdf (S2020 cells 5 and 7)"
#: upstream data files
SOURCES = (
    "cake-lab/CM-DARE: data/processed_data/startup_time/{pre_east,pre_west,on_demand_east,on_demand_west}/vm_time_measure_*.csv",
)
#: procedure
PROCEDURE = "Two panels (east | west), 4 stacked bars each (preemptible K80, P100; on-demand K80, P100); bar = mean of the column, error bar = np.std (ddof=0)."
#: tolerance rule of its numbers
TOLERANCE = "EXACT numbers within 1e-6 relative (or the printed rounding as atol); APPROX numbers within the rule of their row in datasets/reference/paper_numbers"
#: reproduction status of the data behind it
STATUS = "EXACT-DATA"
#: non-empty: why the item cannot be reproduced at all
UNAVAILABLE = ""
#: non-empty: why figure() draws nothing
NO_FIGURE = ""
#: non-empty: why numbers() is empty
NO_NUMBERS = ""
#: datasets/reference/paper_numbers area its numbers() compares (the whole area)
NUMBERS_AREA = "transient"
#: item whose numbers() computes this item's numbers
NUMBERS_FROM = ""
#: the id before the papers were packages (still accepted by --only)
LEGACY_ID = "startup_breakdown"
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
    """The tidy frame the figure draws (``perfmodel.figures.startup_breakdown_data``)."""
    return _impl.startup_breakdown_data()


def numbers() -> pd.DataFrame:
    """Paper value next to reproduced value (``COMPARISON_COLUMNS``) for the whole ``transient`` area (rows of other items name them in ``item``)."""
    return _impl.transient_numbers_data()


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return _impl.startup_breakdown(data=data, ax=ax)
