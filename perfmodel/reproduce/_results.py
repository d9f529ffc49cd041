"""What a reproduction gives: the status of each number against the paper, and the result of a run."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from perfmodel.papers._numbers import OWN_RESULT_STATUS

__all__ = ["number_status", "ReproductionResult"]


# --------------------------------------------------------------------------------------------------- statuses
def number_status(row) -> tuple[str, bool]:
    """(status, failed) of one comparison row (a mapping with ``paper_value``, ``reproduced``, ``status``,
    ``within_tolerance``).

    ``failed`` is True only for a number the reference says should reproduce (EXACT or APPROX) that does not.
    """
    cat = row["status"]
    has_paper = not _isnan(row["paper_value"])
    has_rep = not _isnan(row["reproduced"])
    if cat == "NO-PAPER-VALUE":
        return "computed", False
    if cat == OWN_RESULT_STATUS:
        return "perfmodel result", False
    if cat == "MISSING" or (has_paper and not has_rep):
        return "not reproducible", cat in ("EXACT", "APPROX")
    ok = row["within_tolerance"]
    ok = bool(ok) if ok is not None and not (isinstance(ok, float) and math.isnan(ok)) and ok is not pd.NA else False
    if ok:
        return ("reproduced" if cat == "EXACT" else "within tolerance"), False
    return "differs", cat in ("EXACT", "APPROX")


def _isnan(v) -> bool:
    return v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))


def _str(v):
    return None if _isnan(v) else str(v)


def _num(v):
    """JSON value of a number: None for NaN, int when integral and small, else the float."""
    if _isnan(v):
        return None
    v = float(v)
    return int(v) if v.is_integer() and abs(v) < 2**53 else v


# ------------------------------------------------------------------------------------------------------ runner
@dataclass
class ReproductionResult:
    """What :func:`reproduce` did: the numbers, the figures written, failures, and timings."""

    out: Path
    numbers: pd.DataFrame
    figures: dict = field(default_factory=dict)  # item id -> [stems]
    errors: dict = field(default_factory=dict)  # item id -> message
    seconds: dict = field(default_factory=dict)  # item id -> wall time
    authors_images: dict = field(default_factory=dict)  # item id -> (figure stem it goes beside, path in out, registry key)
    missing_data: dict = field(default_factory=dict)  # upstream dataset folder -> {"items": [ids], "cause": network's reason}

    @property
    def failed(self) -> pd.DataFrame:
        """Numbers that should reproduce and do not."""
        return self.numbers[self.numbers["failed"]] if len(self.numbers) else self.numbers

    @property
    def ok(self) -> bool:
        return not self.errors and self.failed.empty

    def summary(self) -> str:
        """One closing line: OK, or how many items failed and how many numbers should reproduce and do not."""
        n_fail = len(self.failed)
        if self.ok:
            return f"perfmodel reproduce: OK: {len(self.seconds)} items ran, every number that should reproduce does."
        items = f"{len(self.errors)} item(s) failed ({', '.join(sorted(self.errors))})" if self.errors else "0 items failed"
        return f"perfmodel reproduce: FAILED: {items}; {n_fail} number(s) that should reproduce do not."
