"""Moved to :mod:`perfmodel.step.prediction` (the per-operator step model's own package); this old name is an alias of that module."""
import sys

from perfmodel.step import prediction as _moved

sys.modules[__name__] = _moved
