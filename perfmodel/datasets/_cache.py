"""Per-process cache of the frames the loaders derive from upstream files.

Reading, hash-checking and parsing the 96 cluster-run exports takes ~0.15 s; ``perfmodel reproduce`` asks for them
26 times. A loader decorated with :func:`cached_frame` computes its frame once per data source (the
``PERFMODEL_DATA`` mirror folder or the download cache, :func:`perfmodel.datasets._registry.source_key`) and
arguments, and returns a deep copy each time, so a caller that edits its frame never changes what the next caller
gets. Changing ``PERFMODEL_DATA`` in a running process changes the key. The files a loader read are remembered with
their size and modification time; a file replaced or edited since (checked with one ``stat`` each, not a hash) makes
the loader read and hash-check it again, so an edited file still fails its integrity check. :func:`clear_cache`
empties the cache. Errors are not cached.
"""
from __future__ import annotations

import copy
import functools
import os

import pandas as pd

from perfmodel.datasets import _registry
from perfmodel.datasets._registry import source_key

__all__ = ["cached_frame", "clear_cache"]

_CACHE: dict = {}


def _copy(value):
    if isinstance(value, (pd.DataFrame, pd.Series)):
        return value.copy(deep=True)
    return copy.deepcopy(value)


def _stat(path: str):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns)


def _fresh(files: dict) -> bool:
    return all(_stat(p) == sig for p, sig in files.items())


def cached_frame(fn):
    """Decorator: cache ``fn``'s result per data source and arguments; callers get copies."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        key = (fn.__module__, fn.__qualname__, source_key(), args, tuple(sorted(kwargs.items())))
        try:
            hit = _CACHE.get(key)
        except TypeError:  # unhashable argument: no caching
            return fn(*args, **kwargs)
        if hit is None or not _fresh(hit[1]):
            files: dict = {}
            _registry._READ_RECORDERS.append(files)
            try:
                value = fn(*args, **kwargs)
            finally:
                recs = _registry._READ_RECORDERS
                del recs[next(i for i in range(len(recs) - 1, -1, -1) if recs[i] is files)]
            hit = _CACHE[key] = (value, files)
        for rec in _registry._READ_RECORDERS:  # an enclosing cached loader depends on these files too
            rec.update(hit[1])
        return _copy(hit[0])

    wrapper.cache_clear = clear_cache
    return wrapper


def clear_cache() -> None:
    """Forget every cached frame (the next load reads and hash-checks the files again)."""
    _CACHE.clear()
