"""Paper value next to reproduced value: the comparison every ``*_numbers_data()`` / ``*_prediction_data()`` table uses."""
from __future__ import annotations

import numpy as np
import pandas as pd

from perfmodel import datasets as ds

__all__ = ["compare_with_paper", "COMPARISON_COLUMNS"]

#: Columns of every paper-vs-reproduced table.
COMPARISON_COLUMNS = ["item", "quantity", "unit", "paper_value", "reproduced", "status", "rtol", "atol", "within_tolerance", "reason", "citation"]


def compare_with_paper(area: str, reproduced: dict[str, float], *, item: str | None = None, extra_item: str | None = None) -> pd.DataFrame:
    """Join reproduced values with ``datasets/reference/paper_numbers/<area>.csv``.

    Parameters
    ----------
    area : str
        File stem of the paper numbers (``"speed"``, ``"cluster"`` ...).
    reproduced : dict
        Quantity → value computed from the data.
    item : str, optional
        Keep only the rows of this figure/table slug (an area may hold several items); computed quantities of the
        area's other items are dropped, and quantities without a paper value are kept only when ``extra_item`` is set.
    extra_item : str, optional
        Item slug given to the quantities without a paper value (default: ``item``, else the area's first item).

    Returns
    -------
    DataFrame
        :data:`COMPARISON_COLUMNS`. Quantities the code computes without a paper value get status
        ``NO-PAPER-VALUE``; ``within_tolerance`` applies the row's ``rtol``/``atol`` (<NA> without a paper value or
        without a reproduced value).
    """
    ref = ds.load_paper_numbers(area)
    known = set(ref["quantity"])
    if item is not None:
        if item not in set(ref["item"]):
            raise ValueError(f"No paper numbers for item {item!r} in area {area!r}; items there: {', '.join(sorted(set(ref['item'])))}.")
        ref = ref[ref["item"] == item].reset_index(drop=True)
    ref["reproduced"] = ref["quantity"].map(reproduced).astype(float)
    extra = sorted(set(reproduced) - known)  # quantities of other items of the area stay with them
    if extra and (item is None or extra_item is not None):
        ref = pd.concat([ref, pd.DataFrame({"area": area, "item": extra_item or item or ref["item"].iloc[0], "quantity": extra,
                                            "reproduced": [float(reproduced[k]) for k in extra], "status": "NO-PAPER-VALUE"})],
                        ignore_index=True)
    close = np.isclose(ref["reproduced"], ref["paper_value"], rtol=ref["rtol"].fillna(0), atol=ref["atol"].fillna(0))
    unknown = ref["paper_value"].isna() | ref["reproduced"].isna() | ref["rtol"].isna() & ref["atol"].isna()
    ref["within_tolerance"] = pd.array(np.where(unknown, None, close), dtype="boolean")
    return ref[COMPARISON_COLUMNS]
