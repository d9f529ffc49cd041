"""Moved to :mod:`perfmodel.step.op_fit` (the per-operator step model's own package); this old name is an alias of that module."""
import sys

from perfmodel.step import op_fit as _moved

sys.modules[__name__] = _moved
