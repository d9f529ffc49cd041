"""Memory of one GPU while training: the planning-side name of :mod:`perfmodel.step.memory` (the step predictor
reports it in its rows, so it lives with the models; the planner filters on it). Read on first use: importing the
planner loads no model."""
from __future__ import annotations

__all__ = ["predict_memory", "MEMORY_COLUMNS", "OPTIMIZER_STATE_BYTES"]


def __getattr__(name: str):
    if name in __all__:
        from perfmodel.step import memory
        return getattr(memory, name)
    raise AttributeError(f"module 'perfmodel.planning.memory' has no attribute {name!r}")
