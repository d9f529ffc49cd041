"""Reading survival data: event flags as they come from CSV files (shared by the lifetime models and their fitters)."""
from __future__ import annotations

import numpy as np

__all__ = ["as_flags"]


_TRUE = {"true", "t", "yes", "y", "1", "1.0"}


_FALSE = {"false", "f", "no", "n", "0", "0.0"}


def as_flags(values, *, name: str = "revoked") -> np.ndarray:
    """Boolean flags from booleans, 0/1 numbers or the strings ``"True"``/``"False"`` (any case; also yes/no, 1/0).

    ``np.asarray(["False"], dtype=bool)`` is ``[True]`` (a non-empty string): a CSV column read as text would mark
    every server revoked. Anything else (NaN, 2, "maybe") raises a ``ValueError`` naming the values.
    """
    a = np.asarray(values, dtype=object).ravel()
    out = np.empty(a.size, dtype=bool)
    bad = []
    for i, v in enumerate(a):
        if isinstance(v, (bool, np.bool_)):
            out[i] = bool(v)
        elif isinstance(v, (int, float, np.integer, np.floating)) and v in (0, 1):
            out[i] = bool(v)
        elif isinstance(v, str) and v.strip().lower() in _TRUE | _FALSE:
            out[i] = v.strip().lower() in _TRUE
        else:
            bad.append(v)
    if bad:
        raise ValueError(f"{name} must be booleans (True/False, 1/0 or the strings 'True'/'False'); got {len(bad)} other value(s), "
                         f"e.g. {sorted(map(repr, set(map(str, bad))))[:3]}.")
    return out
