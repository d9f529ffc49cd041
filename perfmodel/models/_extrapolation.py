"""Moved to :mod:`perfmodel._extrapolation` (shared by the papers' estimators and the step model); this old name is an alias of that module."""
import sys

from perfmodel import _extrapolation as _moved

sys.modules[__name__] = _moved
