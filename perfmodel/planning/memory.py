"""Memory of one GPU while training: the planning-side name of :mod:`perfmodel.models.memory` (the step predictor
reports it in its rows, so it lives with the models; the planner filters on it)."""
from __future__ import annotations

from perfmodel.models.memory import MEMORY_COLUMNS, OPTIMIZER_STATE_BYTES, predict_memory

__all__ = ["predict_memory", "MEMORY_COLUMNS", "OPTIMIZER_STATE_BYTES"]
