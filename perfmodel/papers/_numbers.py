"""Paper value next to reproduced value: the comparison every ``*_numbers_data()`` / ``*_prediction_data()`` table uses."""
from __future__ import annotations

import numpy as np
import pandas as pd

from perfmodel import datasets as ds

__all__ = ["compare_with_paper", "own_results", "COMPARISON_COLUMNS", "OWN_RESULT_STATUS"]

#: Columns of every paper-vs-reproduced table.
COMPARISON_COLUMNS = ["item", "quantity", "unit", "paper_value", "reproduced", "status", "rtol", "atol", "within_tolerance", "reason", "citation"]

#: ``status`` of a row that is perfmodel's own computed result (no paper value, nothing to reproduce); its ``reason``
#: column holds the protocol the value was computed with.
OWN_RESULT_STATUS = "PERFMODEL-RESULT"


def compare_with_paper(area: str, reproduced: dict[str, float], *, item: str | None = None, extra_item=None) -> pd.DataFrame:
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
    extra_item : str or callable, optional
        Item slug given to the quantities without a paper value (default: ``item``, else the area's first item), or a
        function of the quantity returning its item's slug (an area whose items each compute some of them).

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
        owner = [extra_item(q) for q in extra] if callable(extra_item) else extra_item or item or ref["item"].iloc[0]
        ref = pd.concat([ref, pd.DataFrame({"area": area, "item": owner, "quantity": extra,
                                            "reproduced": [float(reproduced[k]) for k in extra], "status": "NO-PAPER-VALUE"})],
                        ignore_index=True)
    close = np.isclose(ref["reproduced"], ref["paper_value"], rtol=ref["rtol"].fillna(0), atol=ref["atol"].fillna(0))
    unknown = ref["paper_value"].isna() | ref["reproduced"].isna() | ref["rtol"].isna() & ref["atol"].isna()
    ref["within_tolerance"] = pd.array(np.where(unknown, None, close), dtype="boolean")
    return ref[COMPARISON_COLUMNS]


def own_results(item: str, rows, *, citation: str) -> pd.DataFrame:
    """perfmodel's own computed results in the comparison-table shape: no paper value, no tolerance, status
    :data:`OWN_RESULT_STATUS`, and the protocol of each value in its ``reason`` column.

    Parameters
    ----------
    item : str
        The item the rows belong to, by the name ``datasets/reference`` gives items (its ``legacy_id``).
    rows : iterable of dict
        ``quantity``, ``unit``, ``value`` (a finite number) and ``protocol`` (how it was computed: data, split,
        estimator, seed) per result.
    citation : str
        Where the data come from.

    Returns
    -------
    DataFrame
        :data:`COMPARISON_COLUMNS`, one row per result (``reproduced`` holds the value).

    Raises
    ------
    ValueError
        A row lacks a key, its value is not a finite number, its protocol is empty, or a quantity repeats.
    """
    rows = list(rows)
    need = ("quantity", "unit", "value", "protocol")
    for r in rows:
        missing = [k for k in need if k not in r]
        if missing:
            raise ValueError(f"A result row of item {item} lacks {missing}; every row needs {list(need)}. Got keys {sorted(r)}.")
        v = r["value"]
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not np.isfinite(v):
            raise ValueError(f"Result {r['quantity']!r} of item {item} must be a finite number; got {v!r}. Compute it from the data "
                             "(drop the rows it cannot be computed on) instead of reporting a missing value.")
        if not str(r["protocol"]).strip():
            raise ValueError(f"Result {r['quantity']!r} of item {item} has no protocol; say how it was computed (data, split, estimator, seed).")
    dup = sorted({r["quantity"] for r in rows if sum(q["quantity"] == r["quantity"] for q in rows) > 1})
    if dup:
        raise ValueError(f"Item {item} reports the quantities {dup} more than once; give each result its own quantity name.")
    n = len(rows)
    return pd.DataFrame({
        "item": [item] * n, "quantity": [str(r["quantity"]) for r in rows], "unit": [str(r["unit"]) for r in rows],
        "paper_value": np.full(n, np.nan), "reproduced": [float(r["value"]) for r in rows], "status": [OWN_RESULT_STATUS] * n,
        "rtol": np.full(n, np.nan), "atol": np.full(n, np.nan), "within_tolerance": pd.array([None] * n, dtype="boolean"),
        "reason": [str(r["protocol"]) for r in rows], "citation": [citation] * n,
    }, columns=COMPARISON_COLUMNS)
