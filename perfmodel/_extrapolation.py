"""Warnings of the estimators when they predict outside what they were fitted on."""
from __future__ import annotations

import numpy as np

__all__ = ["ExtrapolationWarning", "how_far_outside"]


class ExtrapolationWarning(UserWarning):
    """A prediction is made outside the fitted range (features, GPU, model family, cluster size) or was truncated to
    stay positive; the message says how far outside."""


def _num(v: float) -> str:
    return f"{v:.3g}"


def how_far_outside(name: str, value: float, lo: float, hi: float, *, what: str = "fitted value") -> str | None:
    """``None`` when ``lo <= value <= hi``; else a phrase such as ``"x 0.02 is 5x below the smallest fitted value 0.1"``.

    The factor is given when ``value`` and the bound are both positive; otherwise the difference.
    """
    if lo <= value <= hi:
        return None
    below = value < lo
    bound = lo if below else hi
    side = f"{'below the smallest' if below else 'above the largest'} {what} {_num(bound)}"
    if value > 0 and bound > 0:
        factor = bound / value if below else value / bound
        return f"{name} {_num(value)} is {factor:.3g}x {side}"
    return f"{name} {_num(value)} is {_num(abs(bound - value))} {side}"


def range_report(names, X, lo, hi, *, what: str = "fitted value") -> list[str]:
    """One phrase per column of ``X`` with values outside ``[lo, hi]`` (its farthest value)."""
    X = np.asarray(X, dtype=float)
    out = []
    for j, name in enumerate(names):
        col = X[:, j]
        bad = (col < lo[j]) | (col > hi[j])
        if not bad.any():
            continue
        # the farthest value relative to the fitted range
        span = max(hi[j] - lo[j], abs(hi[j]), abs(lo[j]), 1e-300)
        dist = np.where(col < lo[j], lo[j] - col, col - hi[j]) / span
        phrase = how_far_outside(str(name), float(col[np.argmax(dist)]), float(lo[j]), float(hi[j]), what=what)
        out.append(phrase + (f" ({int(bad.sum())} rows)" if bad.sum() > 1 else ""))
    return out
