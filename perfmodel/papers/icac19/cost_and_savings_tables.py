"""Tables I, II (savings potential), III, IV, V and the Fig. 1 / Fig. 4 annotations.

Quirks the data encodes: Table I and the heatmap annotations charge the PS at the transient price 0.041 $/h (hence Table I's
4-K80 transient cost 1.05 vs Table III's 1.16); the 2-spot ``agg_data.csv`` Cost is wrong for the 5 runs with a revoked worker (charged
for the full duration) and is recomputed with the cost model (giving the paper's 1.47 and (1.31, 0.08)); ``agg_data.csv`` already
excludes the clusters whose training failed; the r=0 8-K80 row of Tables IV and V also excludes the 2 clusters whose master was revoked
after finishing. Table II's "savings potential" 35.4/38.5/40.2 % is transient/on-demand price x 100 (the text says the inverse).
Headlines: 7.7x = 3.91 h / 0.51 h; 62.9 % = (2.83 - 1.05)/2.83.
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers._item import Item
from perfmodel.papers.icac19 import _cost_tables as _impl

ITEM = Item(
    paper="ICAC'19",
    number="Tables I, II, III, IV, V",
    title="Tables I, II (savings potential), III, IV, V and the Fig. 1 / Fig. 4 annotations",
    upstream="paper tables (no upstream file)",
    sources=("cake-lab/transient-deep-learning: data/training/k80_spot/{2,4,8}-spot/{agg_data,vm_data}.csv",
             ("cake-lab/transient-deep-learning: "
              "data/training/k80_on_demand/{k80-demand,2-demand,4-demand,8-demand}/agg_data.csv"),
             "cake-lab/transient-deep-learning: data/training/p100_v100_spot/{p100,v100}/agg_data.csv"),
    procedure=("Per configuration (mean, sample std ddof=1) of training time (h), cost ($) and accuracy (%). Cost "
               "= sum of worker price x worker time (revoked workers by uptime) + PS price x cluster time; r = "
               "number of VMs marked Revoked per run. Table IV overhead = (mean_r - mean_r0)/mean_r0 x 100 from "
               "the rounded table values (accuracy: absolute difference)."),
    status="EXACT-DATA",
    no_figure="Tables; their figures are the heatmap items (Figs. 1 and 4).",
    numbers_area="icac_tables",
    legacy_id="icac_tables",
    variants=(),
    notebook="notebooks/08-icac-tables.ipynb",
    test="tests/papers/test_icac_cost_tables.py",
)

__all__ = ["ITEM", "data", "numbers", "figure"]


def data(table: str = "IV") -> pd.DataFrame:
    """One of the tables (``"I"``, ``"III"``, ``"IV"``, ``"V"``), one row per configuration with (mean, std) columns."""
    tables = {'I': 'icac_table_i_data', 'III': 'icac_table_iii_data', 'IV': 'icac_table_iv_data', 'V': 'icac_table_v_data'}
    if table not in tables:
        raise ValueError(f"table must be one of {sorted(tables)}; got {table!r}.")
    return getattr(_impl, tables[table])()


def numbers() -> pd.DataFrame:
    """Paper value next to reproduced value (``COMPARISON_COLUMNS``) for the whole ``icac_tables`` area (rows of other items name them in ``item``)."""
    return _impl.icac_table_numbers_data()


def figure(data: pd.DataFrame | None = None, ax=None):
    """No figure (see ``ITEM.no_figure``): raises :class:`perfmodel.papers.NoFigureError`."""
    return _item.no_figure(__name__)
