"""Paper value next to reproduced value: the comparison every ``*_prediction_data()`` table uses."""
from __future__ import annotations

import numpy as np
import pandas as pd

from perfmodel import datasets as ds

__all__ = ["compare_with_paper"]


def compare_with_paper(area: str, reproduced: dict[str, float]) -> pd.DataFrame:
    """Join reproduced values with ``datasets/reference/paper_numbers/<area>.csv``.

    Quantities the code computes without a paper value get status ``NO-PAPER-VALUE``; ``within_tolerance`` applies the
    row's ``rtol``/``atol`` (<NA> without a paper value).
    """
    ref = ds.load_paper_numbers(area)
    ref["reproduced"] = ref["quantity"].map(reproduced)
    extra = sorted(set(reproduced) - set(ref["quantity"]))
    ref = pd.concat([ref, pd.DataFrame({"area": area, "item": ref["item"].iloc[0], "quantity": extra, "reproduced": [reproduced[k] for k in extra],
                                        "status": "NO-PAPER-VALUE"})], ignore_index=True)
    close = np.isclose(ref["reproduced"], ref["paper_value"], rtol=ref["rtol"].fillna(0), atol=ref["atol"].fillna(0))
    ref["within_tolerance"] = np.where(ref["paper_value"].isna(), pd.NA, close)
    return ref[["quantity", "unit", "paper_value", "reproduced", "status", "rtol", "atol", "within_tolerance", "reason", "citation"]]
