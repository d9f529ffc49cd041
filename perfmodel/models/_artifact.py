"""Moved to :mod:`perfmodel.step._artifact` (the per-operator step model's own package); this old name is an alias of that module."""
import sys

from perfmodel.step import _artifact as _moved

sys.modules[__name__] = _moved
