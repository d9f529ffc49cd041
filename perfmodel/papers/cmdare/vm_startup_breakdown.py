"""VM start-up: provisioning / staging / booting (s), preemptible vs on-demand.

The y label says "VM Startup Time Cost(ms)" but the values are seconds (the measuring code records ms and the CSVs were divided
by 1000): Provisioning = insert -> STAGING, Staging = STAGING -> RUNNING, Booting = RUNNING -> first successful SSH. Preemptible servers
take longer in Staging (41-49 s vs 28-33 s on-demand).

Its numbers() computes the whole ``transient`` area of ``datasets/reference/paper_numbers`` at once: the rows of the other start-up,
restart and revocation items (and of ICAC'19 Figs. 3 and 5) name their item in the ``item`` column and are reported with them.
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _transient as _impl
from perfmodel.papers._item import Item

ITEM = Item(
    paper="CM-DARE",
    number="not numbered in the upstream sources",
    title="VM start-up: provisioning / staging / booting (s), preemptible vs on-demand",
    upstream="startup_breakdown.pdf (S2020 cells 5 and 7)",
    sources=(("cake-lab/CM-DARE: "
              "data/processed_data/startup_time/{pre_east,pre_west,on_demand_east,on_demand_west}/vm_time_measure_*.csv"),),
    procedure=("Two panels (east | west), 4 stacked bars each (preemptible K80, P100; on-demand K80, P100); bar = "
               "mean of the column, error bar = np.std (ddof=0)."),
    status="EXACT-DATA",
    numbers_area="transient",
    legacy_id="startup_breakdown",
    notebook="notebooks/09-restart-startup.ipynb",
    test="tests/papers/test_transient_overheads.py",
)

__all__ = ["ITEM", "data", "numbers", "figure"]


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
