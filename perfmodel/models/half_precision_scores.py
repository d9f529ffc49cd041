"""Moved to :mod:`perfmodel.step.half_precision_scores` (the per-operator step model's own package); this old name is an alias of that module."""
import sys

from perfmodel.step import half_precision_scores as _moved

sys.modules[__name__] = _moved
