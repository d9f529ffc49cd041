"""What a rebuilt fitted artifact must satisfy: the shipped bytes where the floating-point arithmetic is the one it was
built with, else the same model in every aggregate.

Histogram gradient boosting picks a split among candidates whose gains tie to the last bits; numpy and scikit-learn
take other SIMD kernels on another CPU (AVX2 against AVX-512), so a rebuild elsewhere can pick the other candidate at a
few such ties. The rebuild is then held to: the leave-one-GPU-out scores equal within 1e-9, at least 95 % of the
rows predicted to the bit, the total predicted time within 0.1 %, and the mean absolute difference under 0.1 % of
the mean prediction."""
from __future__ import annotations

import json

import numpy as np


def check_rebuild(header: dict, arrays: dict, h2: dict, a2: dict, *, fmt: int, shipped_pred, rebuilt_pred) -> str:
    """``"bit for bit"`` when the rebuild's header and arrays equal the shipped ones, ``"equivalent"`` when they
    differ only as floating-point ties allow (module docstring); an AssertionError otherwise."""
    same_header = json.loads(json.dumps({"format": fmt, **h2})) == header
    same_arrays = sorted(a2) == sorted(arrays) and all(
        a2[k].dtype == arrays[k].dtype and np.array_equal(a2[k], arrays[k]) for k in arrays)
    if same_header and same_arrays:
        return "bit for bit"
    assert sorted(a2) == sorted(arrays), "the rebuild has other arrays than the shipped artifact"
    assert [t["name"] for t in json.loads(json.dumps(h2["trees"]))] == [t["name"] for t in header["trees"]]
    for g, v in header["scores"].items():
        assert abs(float(h2["scores"][g]) - float(v)) < 1e-9, (g, v, h2["scores"][g])
    a, b = np.asarray(shipped_pred, float), np.asarray(rebuilt_pred, float)
    rel = np.abs(b / a - 1)
    assert (rel < 1e-9).mean() >= 0.95, f"only {(rel < 1e-9).mean():.3f} of the rows predicted to the bit"
    assert abs(b.sum() / a.sum() - 1) < 1e-3 and np.mean(np.abs(b - a)) < 1e-3 * np.mean(a)
    return "equivalent"
