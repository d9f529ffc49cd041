"""Checks of the planners' arguments, shared by :func:`perfmodel.planning.plan_cloud`, :func:`plan_cmdare` and
:func:`perfmodel.plan`: numbers that must be positive numbers (not strings, NaN or booleans) and GPUs given by name."""
from __future__ import annotations

import math
from numbers import Integral, Real

__all__ = ["positive_number", "positive_int", "gpu_names"]


def positive_number(value, name: str, what: str, example: str):
    """``value`` if it is a positive, finite real number (None passes through); otherwise an error saying what was got,
    what was expected and what to pass (e.g. ``deadline_h="2"``: pass ``deadline_h=2.0``); ``what`` is e.g. ``"number of hours"``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{name} must be a positive {what}; got {value!r} ({type(value).__name__}). "
                        f"Pass a number, e.g. {name}={example}.")
    if not (math.isfinite(float(value)) and value > 0):
        raise ValueError(f"{name} must be a positive {what}; got {value!r}. Pass a finite number above zero, "
                         f"e.g. {name}={example}.")
    return value


def positive_int(value, name: str, unit: str, example: int) -> int:
    """``value`` as an int if it is a positive whole number (4 and 4.0 are 4; "4", 2.5, True and 0 are errors)."""
    ok = not isinstance(value, bool) and isinstance(value, Real)
    if ok and not isinstance(value, Integral):
        ok = math.isfinite(float(value)) and float(value).is_integer()
    if not ok or value < 1:
        kind = TypeError if not isinstance(value, Real) or isinstance(value, bool) else ValueError
        raise kind(f"{name} must be a positive whole number of {unit}; got {value!r} ({type(value).__name__}). "
                   f"Pass an int, e.g. {name}={example} (fractions are not rounded for you).")
    return int(value)


def gpu_names(gpus, planner: str) -> list:
    """``gpus`` as a list of names (one name or several), refusing a GPU spec (a dict or a
    :class:`perfmodel.datasets.GPUSpec`): the planners rent GPUs by name, from a price table."""
    from perfmodel.datasets import GPUSpec

    items = [gpus] if isinstance(gpus, (str, dict, GPUSpec)) else list(gpus)
    for g in items:
        if isinstance(g, (dict, GPUSpec)):
            what = ("a dict" + (f" (a GPU spec of {g.get('gpu')!r}?)" if isinstance(g, dict) and "gpu" in g else "")
                    if isinstance(g, dict) else f"a GPUSpec of {g.gpu!r}")
            raise TypeError(f"gpus for {planner} must be GPU names (catalog ids such as 'H100', or device names); got "
                            f"{what}. A GPU spec held as a dict d is a perfmodel.datasets.GPUSpec(**d), which "
                            "predict_step_time and predict_memory take; a planner rents GPUs by name from its price table, "
                            "so pass the name of the GPU (a catalog id, with a price row for it in prices=) instead.")
    return items
